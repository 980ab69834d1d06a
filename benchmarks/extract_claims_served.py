# python benchmarks/extract_claims_served.py --sweep issue46-served
"""extract_claims as served, side by side (issue 46): the optimize.py runs of one sweep (optimizer=none: the program
as written on the base student, on the student with a stage adapter (`stage.lora`), or the sentence rules,
`stage.backend=rules`), read back from MLflow: claim F1 on test with 95% bootstrap intervals over paragraphs, per
language, claims per paragraph against the gold's, the share of written claims the checker's grounding guard would
drop (factlab.matching.text.grounded at the checkers' min_grounding 0.5), the parse failures, and every run paired
with every other on the same test paragraphs. Writes outputs/benchmarks/extract_claims_served/results.json.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path("outputs/benchmarks/extract_claims_served")


def _value(text: str):
    try:
        return ast.literal_eval(text) if isinstance(text, str) else text
    except (ValueError, SyntaxError):
        return None


def summary(rows: list[dict]) -> dict:
    """F1 (all / en / zh with intervals), claims per paragraph, grounded share and parse failures of one run."""
    from factlab.matching.text import grounded
    from factlab.optimize.sweep import score_interval

    out: dict = {"n": len(rows)}
    for lang in ("all", "en", "zh"):
        scores = [float(r["score"]) for r in rows if lang == "all" or r["lang"] == lang]
        out[lang] = {"n": len(scores), "f1": sum(scores) / len(scores), "ci": score_interval(scores)}
    written = gold = ungrounded = failed = 0
    for row in rows:
        pred, inputs, truth = _value(row["prediction"]) or {}, _value(row["inputs"]) or {}, _value(row["gold"]) or {}
        claims = [c for c in (pred.get("claims") or []) if isinstance(c, str)]
        failed += row.get("error") not in (None, "None", "")
        written += len(claims)
        gold += len(truth.get("claims") or [])
        ungrounded += sum(not grounded(c, inputs.get("paragraph", ""), 0.5) for c in claims)
    out.update(claims_per_paragraph=written / len(rows), gold_per_paragraph=gold / len(rows),
               not_grounded_share=ungrounded / written if written else 0.0, failed=failed)
    return out


def main() -> None:
    import mlflow

    from factlab.optimize.sweep import delta_interval, find_sweep, labels
    from factlab.tracking.store import tracking_uri

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--sweep", default="issue46-served")
    args = parser.parse_args()
    uri = tracking_uri(None)
    runs = [r for r in find_sweep(mlflow.MlflowClient(tracking_uri=uri), args.sweep) if r.finished]
    names = labels(runs)
    table, results, keyed, langs = [], {"sweep": args.sweep, "runs": {}}, {}, {}
    for name, run in zip(names, runs, strict=True):
        path = mlflow.artifacts.download_artifacts(run_id=run.run_id, artifact_path="predictions/test_compiled.jsonl",
                                                   tracking_uri=uri)
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        point = summary(rows)
        results["runs"][name] = {"run_id": run.run_id, **point}
        keyed[name] = {f"{r['case_id']}|{r['inputs']}": float(r["score"]) for r in rows}
        langs[name] = {f"{r['case_id']}|{r['inputs']}": r["lang"] for r in rows}
        ci = point["all"]["ci"]
        table.append(f"| {name} | {point['all']['f1']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] ({point['n']}) | "
                     f"{point['en']['f1']:.3f} ({point['en']['n']}) | {point['zh']['f1']:.3f} ({point['zh']['n']}) | "
                     f"{point['claims_per_paragraph']:.2f} (gold {point['gold_per_paragraph']:.2f}) | "
                     f"{point['not_grounded_share']:.3f} | {point['failed']} | {run.run_id[:8]} |")
    print(f"\nextract_claims served, sweep {args.sweep} (test paragraphs; 95% bootstrap over paragraphs)\n")
    print("| run | claim F1 | en | zh | claims / paragraph | not grounded | failed | MLflow run |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(table))
    print("\n| pair (a - b) | language | paragraphs | paired gain |\n|---|---|---|---|")
    results["pairs"] = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for lang in ("all", "en", "zh"):
                keys = [k for k in keyed[a] if k in keyed[b] and (lang == "all" or langs[a].get(k) == lang)]
                before, after = [keyed[b][k] for k in keys], [keyed[a][k] for k in keys]
                gain = sum(after) / len(keys) - sum(before) / len(keys)
                lo, hi = delta_interval(before, after)
                results["pairs"].append({"a": a, "b": b, "lang": lang, "n": len(keys), "gain": gain, "ci": [lo, hi]})
                print(f"| {a} - {b} | {lang} | {len(keys)} | {gain:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwritten: {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
