# python benchmarks/routing_layers.py [--routing default]
"""Routing by paragraph type (conf/routing/<name>.yaml) against every layer on every paragraph (routing=all), on the
independently written gold (datasets/layers/independent/: 62 documents, written without sight of the code): which
gold findings each routing keeps, and what it saves.

The layers run as the checkers run them (factlab/checkers/layers.py): the logic layer only on paragraphs routed to
it, the consistency checks over the whole document with findings shown only on paragraphs routed to consistency, the
claim checker (facts) only on paragraphs routed to facts. Found / right kind / precision / false alarms as in
benchmarks/independent_logic.py and independent_consistency.py (the same engines at their shipped settings: rules +
causal-strength model for logic, the default document_checks for consistency); "kept" = found under the routing
and under routing=all alike. Saved: the share of paragraphs that skip the facts layer (each would cost claim
extraction, search and judging) and the logic layer. The paragraph types come from the routing table's patterns
(paragraph_typer=rules, the default; docs/layers.md measured the typers). Writes outputs/benchmarks/routing_layers/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from independent_consistency import ANSWERS as CONSISTENCY  # noqa: E402  (the same gold, the same scoring)
from independent_logic import ANSWERS as LOGIC  # noqa: E402
from independent_logic import GOLD, ROOT, save, score  # noqa: E402

OUT = Path("outputs/benchmarks/routing_layers")


def flags_for(docs: list[dict], routing, logic, checks) -> tuple[dict, dict, dict]:
    """(logic flags, consistency flags, counts) of every document under `routing` (None = every layer everywhere)."""
    from factlab.rules.document import consistency_findings

    logic_flags: dict[str, dict[int, list[str]]] = {}
    consistency_flags: dict[str, dict[int, list[str]]] = {}
    counts = {"paragraphs": 0, "facts_off": 0, "logic_off": 0, "consistency_on": 0, "ms": 0.0}
    for doc in docs:
        texts = doc["paragraphs"]
        routed = [routing.layers_for(t)[1] if routing is not None else ["facts", "logic", "consistency"]
                  for t in texts]
        started = time.perf_counter()
        logic_flags[doc["doc_id"]] = {}
        for index in range(len(texts)):
            if "logic" not in routed[index]:
                continue
            kinds = [issue.kind for issue in logic.check(texts, index)]
            if kinds:
                logic_flags[doc["doc_id"]][index + 1] = kinds
        consistency_flags[doc["doc_id"]] = {}
        for finding in consistency_findings([(f"p{i + 1}", t) for i, t in enumerate(texts)], checks):
            number = int(finding.paragraph_id[1:])
            if "consistency" in routed[number - 1]:
                consistency_flags[doc["doc_id"]].setdefault(number, []).append(finding.kind)
        counts["ms"] += 1000 * (time.perf_counter() - started)
        counts["paragraphs"] += len(texts)
        counts["facts_off"] += sum("facts" not in r for r in routed)
        counts["logic_off"] += sum("logic" not in r for r in routed)
        counts["consistency_on"] += sum("consistency" in r for r in routed)
    return logic_flags, consistency_flags, counts


def main() -> None:
    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.data.jsonl import read_jsonl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--routing", default="default", help="the conf/routing option compared with routing=all")
    args = parser.parse_args()
    cfg = compose_config("verify", [f"routing={args.routing}", "input=x", "sources=x"])
    routing, logic = instantiate(cfg.routing), instantiate(cfg.logic)
    checks = list(cfg.document_checks)
    docs = read_jsonl(GOLD)
    results = {"gold": str(GOLD.relative_to(ROOT)), "documents": len(docs), "routing": args.routing, "rows": {}}
    per_finding = {}
    for name, table in (("all", None), (args.routing, routing)):
        logic_flags, consistency_flags, counts = flags_for(docs, table, logic, checks)
        row = {"logic": score(docs, logic_flags, LOGIC), "consistency": score(docs, consistency_flags, CONSISTENCY),
               **counts}
        results["rows"][name] = row
        per_finding[name] = {(d["doc_id"], f["paragraph"], f["kind"]): bool(
            (logic_flags if f["kind"] in LOGIC else consistency_flags)[d["doc_id"]].get(f["paragraph"]))
            for d in docs for f in d["findings"] if f["kind"] in LOGIC or f["kind"] in CONSISTENCY}
    lost = sorted(k for k, v in per_finding["all"].items() if v and not per_finding[args.routing][k])
    results["lost"] = [{"doc_id": d, "paragraph": p, "kind": k} for d, p, k in lost]
    print(f"\nRouting on {GOLD.relative_to(ROOT)} ({len(docs)} documents)\n")
    print("| routing | logic found | logic precision | logic false alarms | consistency found | consistency "
          "precision | consistency false alarms | paragraphs without facts | without logic | layer ms / doc |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, row in results["rows"].items():
        lo, co = row["logic"], row["consistency"]
        print(f"| {name} | {lo['found']:.3f} ({lo['findings']}) | {lo['precision']:.2f} | {lo['false_alarms_clean']} | "
              f"{co['found']:.3f} ({co['findings']}) | {co['precision']:.2f} | {co['false_alarms_clean']} | "
              f"{row['facts_off']} of {row['paragraphs']} | {row['logic_off']} | {row['ms'] / len(docs):.1f} |")
    print(f"\nfindings found with every layer everywhere and lost to routing={args.routing}: {len(lost)}")
    for item in results["lost"]:
        print(f"  {item['doc_id']} p{item['paragraph']}: {item['kind']}")
    save(OUT, results)


if __name__ == "__main__":
    main()
