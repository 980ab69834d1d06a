"""The logic layer on its gold: the rule path (factlab/rules/logic.py) and the LM stage `logic`
(factlab/programs/logic.py, on a local LM), scored paragraph by paragraph with the stage's own metric
(`factlab.programs.logic.score_verdict`), per language and kind, with 95% bootstrap intervals over documents.

    python benchmarks/logic_layer.py                                   # rules on both gold files
    python benchmarks/logic_layer.py --engine stage --lm local_qwen05  # the LM stage (one call per paragraph)
    python benchmarks/logic_layer.py --engine rules_strength           # the rules + the causal-strength model
    python benchmarks/logic_layer.py --gold datasets/layers/logic_holdout.jsonl --json out.json

Columns: `score` (the metric's mean: 1 right, 0.75 right kind with the wrong span, 0.5 flagged with the wrong kind,
0 missed or false alarm), `flag P / R` (a paragraph flagged at all, against the gold having a finding there),
`kind acc` (flagged gold paragraphs given the right kind), `false alarms` (sound paragraphs flagged).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLD = [ROOT / "datasets" / "layers" / "logic_gold.jsonl", ROOT / "datasets" / "layers" / "logic_holdout.jsonl"]


def rows_for(docs: list[dict], engine: str, lm: str) -> list[dict]:
    """One row per paragraph: gold kind / keyword, predicted kind / keyword, score, seconds."""
    from factlab.checkers.logic import issues_of
    from factlab.programs.logic import SOUND, earlier_text, score_verdict
    from factlab.rules.logic import LogicRules

    rules, program, handle = LogicRules(), None, None
    layer = None
    if engine == "rules_strength":
        from factlab.checkers.logic import LogicLayer
        from factlab.checkers.strength import StrengthOverclaim

        layer = LogicLayer(rules, strength=StrengthOverclaim(rules=rules))
    if engine == "stage":
        from hydra.utils import instantiate

        from factlab.config import compose_config
        from factlab.stages.build import build_program

        cfg = compose_config("run_stage", ["stage=logic", f"lm@student={lm}"])
        program, handle = build_program(cfg.stage), instantiate(cfg.student)
    rows = []
    from tqdm import tqdm

    for doc in tqdm(docs, desc=f"logic {engine}", unit="doc"):
        gold = {f["paragraph"]: f for f in doc["findings"]}
        for index, text in enumerate(doc["paragraphs"]):
            start = time.perf_counter()
            if engine == "rules":
                issues = rules.check_paragraph(text, doc["paragraphs"][:index])
            elif layer is not None:
                issues = layer.check(doc["paragraphs"], index)
            else:
                try:
                    with handle.context():
                        issues = issues_of(program(paragraph=text, earlier=earlier_text(doc["paragraphs"][:index])),
                                           text)
                except Exception as exc:  # counted as the paragraph's answer "sound" (the pipeline drops the layer)
                    print(f"  error on {doc['doc_id']} p{index + 1}: {type(exc).__name__}", file=sys.stderr)
                    issues = []
            seconds = time.perf_counter() - start
            want = gold.get(index + 1)
            got = issues[0] if issues else None
            kind, keyword = (got.kind, got.keyword) if got else (SOUND, "")
            gold_kind = want["kind"] if want else SOUND
            score, failure = score_verdict(gold_kind, want["keyword"] if want else "", kind, keyword)
            rows.append({"doc_id": doc["doc_id"], "lang": doc["lang"], "paragraph": index + 1, "gold": gold_kind,
                         "gold_keyword": want["keyword"] if want else "", "pred": kind, "pred_keyword": keyword,
                         "score": score, "failure": failure, "seconds": seconds})
    return rows


def summarise(rows: list[dict]) -> dict:
    """The metrics of a set of paragraph rows."""
    if not rows:
        return {}
    flagged_gold = [r for r in rows if r["gold"] != "sound"]
    flagged_pred = [r for r in rows if r["pred"] != "sound"]
    hit = [r for r in flagged_gold if r["pred"] != "sound"]
    sound = [r for r in rows if r["gold"] == "sound"]
    return {
        "paragraphs": len(rows), "score": sum(r["score"] for r in rows) / len(rows),
        "flag_precision": len(hit) / len(flagged_pred) if flagged_pred else None,
        "flag_recall": len(hit) / len(flagged_gold) if flagged_gold else None,
        "kind_accuracy": (sum(r["pred"] == r["gold"] for r in hit) / len(flagged_gold)) if flagged_gold else None,
        "false_alarms": f"{sum(r['pred'] != 'sound' for r in sound)} / {len(sound)}",
    }


def table(rows: list[dict], seed: int = 0) -> dict:
    """Metrics overall, per language and per gold kind, with document-bootstrap intervals of score and recall."""
    from factlab.metrics import bootstrap_ci

    by_doc: dict[str, list[dict]] = {}
    for row in rows:
        by_doc.setdefault(row["doc_id"], []).append(row)
    out = {}
    groups = {"all": rows, "en": [r for r in rows if r["lang"] == "en"], "zh": [r for r in rows if r["lang"] == "zh"]}
    for kind in sorted({r["gold"] for r in rows}):
        groups[f"gold={kind}"] = [r for r in rows if r["gold"] == kind]
    for name, subset in groups.items():
        metrics = summarise(subset)
        if name in ("all", "en", "zh"):
            docs = [d for d, rs in by_doc.items() if name == "all" or rs[0]["lang"] == name]
            ci = bootstrap_ci(docs, lambda ds: summarise([r for d in ds for r in by_doc[d]]),
                              ["score", "flag_recall", "flag_precision"], 1000, seed, 0.95)
            metrics["ci"] = ci
        out[name] = metrics
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", nargs="*", type=Path, default=None, help="gold files (default: both)")
    parser.add_argument("--engine", choices=["rules", "rules_strength", "stage"], default="rules",
                        help="rules_strength = the rules plus the causal-strength model (logic=rules_strength)")
    parser.add_argument("--lm", default="local_qwen05", help="conf/lm option for --engine stage")
    parser.add_argument("--json", type=Path, default=None, help="write rows and tables here")
    args = parser.parse_args()
    from factlab.data.loaders.layer_gold import read_logic_gold

    result = {"engine": args.engine, "lm": args.lm if args.engine == "stage" else None, "files": {}}
    for path in args.gold or [p for p in GOLD if p.exists()]:
        rows = rows_for(read_logic_gold(path), args.engine, args.lm)
        result["files"][path.name] = {"table": table(rows), "rows": rows,
                                      "seconds_per_paragraph": sum(r["seconds"] for r in rows) / len(rows)}
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        ci = lambda m, k: f" [{m['ci'][k][0]:.2f}, {m['ci'][k][1]:.2f}]" if k in m.get("ci", {}) else ""  # noqa: E731
        print(f"\n{path.name} ({args.engine}{' ' + args.lm if args.engine == 'stage' else ''}; "
              f"{result['files'][path.name]['seconds_per_paragraph'] * 1000:.1f} ms per paragraph)")
        print("| subset | paragraphs | score | flag P | flag R | kind acc | false alarms |")
        print("|---|---|---|---|---|---|---|")
        for name, m in result["files"][path.name]["table"].items():
            print(f"| {name} | {m['paragraphs']} | {fmt(m['score'])}{ci(m, 'score')} | {fmt(m['flag_precision'])} | "
                  f"{fmt(m['flag_recall'])}{ci(m, 'flag_recall')} | {fmt(m['kind_accuracy'])} | {m['false_alarms']} |")
        for row in rows:
            if row["failure"]:
                print(f"  {row['failure']:<11} {row['doc_id']} p{row['paragraph']}: gold {row['gold']} "
                      f"“{row['gold_keyword']}”, got {row['pred']} “{row['pred_keyword']}”")
        print(Counter(r["failure"] or "right" for r in rows))
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
