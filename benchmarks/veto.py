# python benchmarks/veto.py [--cap 1500] [--quick]
"""What the classifier veto (factlab/checkers/veto.py) costs and catches, on public pairs nobody here wrote.

The veto sets aside an LM judge's support when the shipped classifier judge reads the same (claim, snippet) as
`contradict` (its own decision, p(contradict) >= min_contradict) or gives it p(support) < min_support. With an LM
judge that is right, a veto on a gold entailment is a lost support (its cost: a `correct` becomes `unverifiable`,
never `wrong`); a veto on a gold contradiction is a steered or mistaken support caught. Per set and language, for
each setting in SETTINGS:

- false veto: the share of gold-entailment pairs the classifier would veto (an upper bound on the supports lost);
- caught: the share of gold-contradiction pairs it would veto (a steered `support` on such a pair is stopped);
- neutral vetoed: the share of gold-neutral pairs it would veto (an LM support there is wrong anyway).

Sets (the judge recipe's `targets`, never trained on): LingNLI val (en), ANLI dev (en, adversarial), XNLI-zh test
(zh), OCNLI dev (zh); the bundled test split's gold snippets (team-written: a regression guard). Seeded samples of at
most --cap pairs per set; 95% Wilson intervals. Writes outputs/benchmarks/veto/results.json and prints a markdown
table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

OUT = Path("outputs/benchmarks/veto")
# (min_contradict, min_support): contradiction alone at two strengths, then with a support floor, up to agreement
# (the classifier's own support decision, threshold 0.4 in judge-e5s-v1)
SETTINGS = ((0.5, 0.0), (0.0, 0.0), (0.0, 0.15), (0.5, 0.2), (0.0, 0.4))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of k successes in n.

    >>> [round(v, 3) for v in wilson(0, 30)]
    [0.0, 0.114]
    """
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def cell(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k / n:.3f} [{low:.3f}, {high:.3f}] (n={n})" if n else "n=0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=int, default=1500, help="pairs per set at most (seeded sample)")
    parser.add_argument("--quick", action="store_true", help="100 pairs per set (a smoke run, not a measurement)")
    parser.add_argument("--model", default="factlab:judge-e5s-v1")
    args = parser.parse_args()

    from omegaconf import OmegaConf
    from tqdm import tqdm

    from factlab.checkers.veto import ClassifierVeto
    from factlab.judge.pairs import read_set

    sys.path.insert(0, str(Path(__file__).parent))
    from judge_targets import _bundled_test  # noqa: PLC0415 - the same bundled test split as the judge's benchmark

    from factlab.judge.train import bundled_pairs

    root = os.environ.get("FACTLAB_DATA_ROOT", "../shared/data")
    targets = OmegaConf.to_container(OmegaConf.load("conf/recipe/judge_e5.yaml"), resolve=False)["targets"]
    cap = 100 if args.quick else args.cap
    rng = random.Random(0)
    sets: dict[str, list] = {}
    for name in ("lingnli_val", "anli_dev", "xnli_zh_test", "ocnli_dev"):
        try:
            pairs = read_set(name, targets[name], root)
        except Exception as exc:  # noqa: BLE001 - a set missing here is reported, the rest measured
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        sets[name] = rng.sample(pairs, min(cap, len(pairs)))
    sets["bundled_test"] = [p for p in bundled_pairs(_bundled_test()) if p.source == "bundled"]

    veto = ClassifierVeto(args.model)
    judge = veto.judge
    results: dict = {"model": args.model, "cap": cap, "sets": {}}
    rows_md = ["| set | lang | gold | n | " + " | ".join(f"vetoed (min_contradict {c:g}, min_support {s:g})"
                                                      for c, s in SETTINGS) + " |",
               "|---|---|---|---|" + "---|" * len(SETTINGS)]
    vetoes = {setting: ClassifierVeto(args.model, *setting) for setting in SETTINGS}
    for name, pairs in sets.items():
        probs = []
        for start in tqdm(range(0, len(pairs), 64), desc=name, unit="batch"):
            part = pairs[start:start + 64]
            probs += judge.predict_proba([p.claim for p in part], [p.evidence for p in part])
        for lang in sorted({p.lang for p in pairs}):
            for gold in ("support", "contradict", "neutral"):
                picked = [q for p, q in zip(pairs, probs, strict=True)
                          if p.lang == lang and (p.relations[0] if p.relations[0] in ("support", "contradict")
                                                 else "neutral") == gold]
                if not picked:
                    continue
                counts = {s: sum(vetoes[s].reason(judge, q) is not None for q in picked) for s in SETTINGS}
                results["sets"].setdefault(name, {}).setdefault(lang, {})[gold] = {
                    "n": len(picked), **{f"vetoed@{c:g}/{m:g}": counts[(c, m)] for c, m in SETTINGS}}
                rows_md.append(f"| {name} | {lang} | {gold} | {len(picked)} | "
                               + " | ".join(cell(counts[s], len(picked)) for s in SETTINGS) + " |")
        print(name, json.dumps(results["sets"][name]), flush=True)
    table = "\n".join(rows_md)
    print("\n" + table)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (OUT / "table.md").write_text(table + "\n", encoding="utf-8")
    print(f"\nwrote {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
