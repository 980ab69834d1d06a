# python benchmarks/independent_consistency.py
"""The consistency layer (factlab/rules/document.py, `consistency_findings`) on the independently written gold
(datasets/layers/independent/: 62 documents, 24 clean, written without sight of the code), scored as
benchmarks/independent_logic.py scores the logic layer: per gold finding of the kinds in ANSWERS (unit_inconsistency,
abbreviation_conflict, number_mismatch, term_drift, and the gold's timeliness kind outdated_as_current; 8 each),
`found` = the layer raises a finding located at the finding's paragraph, `right kind` = one of the kinds that answers
it (ANSWERS; term_drift by the term_drift check, a default since 2026-12-06); precision per raised finding; false
alarms in the clean documents. 95% bootstrap intervals over documents. Writes
outputs/benchmarks/independent_consistency/results.json."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from independent_logic import GOLD, ROOT, save, score  # noqa: E402  (the same gold, the same scoring)

OUT = Path("outputs/benchmarks/independent_consistency")
ANSWERS = {"unit_inconsistency": {"unit_format", "unit_mismatch"}, "abbreviation_conflict": {"abbreviation"},
           "number_mismatch": {"number_format", "percent_points", "number_restated", "restated_value"},
           "term_drift": {"term_drift"},
           "outdated_as_current": {"outdated_value"}}  # a timeliness kind in the gold's taxonomy, a document check here


def main() -> None:
    import argparse

    from factlab.data.jsonl import read_jsonl
    from factlab.metrics import bootstrap_ci
    from factlab.rules.document import DEFAULT_KINDS, consistency_findings

    parser = argparse.ArgumentParser()
    parser.add_argument("--kinds", nargs="+", default=list(DEFAULT_KINDS), help="the checks (default: the layer's)")
    args = parser.parse_args()

    docs = read_jsonl(GOLD)
    flags: dict[str, dict[int, list[str]]] = {}
    started = time.perf_counter()
    raised = []
    for doc in docs:
        found = consistency_findings([(f"p{i + 1}", text) for i, text in enumerate(doc["paragraphs"])], args.kinds)
        flags[doc["doc_id"]] = {}
        for finding in found:
            flags[doc["doc_id"]].setdefault(int(finding.paragraph_id[1:]), []).append(finding.kind)
            raised.append({"doc_id": doc["doc_id"], "kind": finding.kind, "paragraph": finding.paragraph_id,
                           "keyword": finding.keyword, "other": finding.other.paragraph_id})
    ms = 1000 * (time.perf_counter() - started) / len(docs)
    results = {"gold": str(GOLD.relative_to(ROOT)), "documents": len(docs), "ms_per_document": round(ms, 2),
               "by_lang": {}, "raised": raised}
    print(f"\nConsistency layer on {GOLD.relative_to(ROOT)} ({len(docs)} documents; {ms:.1f} ms a document)\n")
    print("| lang | gold findings | found | right kind | raised | precision | false alarms (clean docs) |")
    print("|---|---|---|---|---|---|---|")
    for lang in ("all", "en", "zh"):
        subset = [d for d in docs if lang == "all" or d["lang"] == lang]
        point = score(subset, flags, ANSWERS)
        ci = bootstrap_ci(subset, lambda ds: score(ds, flags, ANSWERS), ["found", "right_kind"], 1000, 0, 0.95)
        results["by_lang"][lang] = {**point, "ci95": ci}
        print(f"| {lang} | {point['findings']} | {point['found']:.3f} [{ci['found'][0]:.2f}, {ci['found'][1]:.2f}] | "
              f"{point['right_kind']:.3f} | {point['flags']} | {point['precision']:.3f} | "
              f"{point['false_alarms_clean']} in {point['clean_docs']} |")
    per_kind = {kind: score(docs, flags, {kind: answer}) for kind, answer in ANSWERS.items()}
    results["per_kind"] = per_kind
    print("\n| gold kind | n | found | right kind |\n|---|---|---|---|")
    for kind, point in per_kind.items():
        print(f"| {kind} | {point['findings']} | {point['found']:.3f} | {point['right_kind']:.3f} |")
    save(OUT, results)


if __name__ == "__main__":
    main()
