"""The timeliness check (factlab/rules/timeliness.py) on its gold (datasets/layers/timeliness_gold.jsonl: a claim,
its sources with dates in the metadata or only in the text, each judged snippet's relation, and the effect a user
expects: support_kept, support_downgraded or no_change, with the newest source's id): accuracy of the effect and of the
newest-source pick, per language, with 95% Wilson intervals, then every miss (printed table). The gold is read by
`factlab.data.benchmark_gold`, scored by `factlab.evals.layer_gold.score_timeliness`.

    python benchmarks/timeliness.py [gold.jsonl] [timeliness=<conf option>]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cell(row: dict, name: str) -> str:
    lo, hi = row[f"{name}_ci"]
    return f"{row[name]}/{row['cases']} = {row[f'{name}_acc']:.2f} [{lo:.2f}, {hi:.2f}]"


def main(argv: list[str]) -> None:
    from factlab.data.benchmark_gold import TIMELINESS_GOLD
    from factlab.evals.layer_gold import score_timeliness

    gold, check = TIMELINESS_GOLD, None
    for arg in argv:
        if arg.startswith("timeliness="):
            from hydra.utils import instantiate

            from factlab.config import compose_option

            check = instantiate(compose_option("timeliness", arg.split("=", 1)[1]))
        else:
            gold = Path(arg)
    result = score_timeliness(gold, check)
    print("| lang | cases | effect accuracy [95% CI] | newest-source accuracy [95% CI] | downgrades found | "
          "false downgrades |")
    print("|---|---|---|---|---|---|")
    for key, row in result["table"].items():
        print(f"| {key} | {row['cases']} | {_cell(row, 'effect')} | {_cell(row, 'newest')} | {row['downgrades']} | "
              f"{row['false_downgrades']} |")
    for case_id, what, want, got, tense, notes in result["misses"]:
        print(f"missed  {case_id} {what}: want {want}, got {got} (claim {tense.kind}, cue {tense.cue!r}); "
              f"notes: {notes}")


if __name__ == "__main__":
    main(sys.argv[1:])
