# python benchmarks/independent_logic.py [--model factlab:causal-strength-e5s-v1] [--scope factlab:scope-e5s-v1]
"""The logic layer on the independently written gold (datasets/layers/independent/: 62 documents, 32 en / 30 zh,
written by a writer who saw only the finding types, never the code; 24 clean), three engines side by side in one
run: the cue-word rules (factlab/rules/logic.py), the causal-strength model path (factlab/checkers/strength.py) and
both (the layer with `strength` on: rules first, the model's causal_overclaim where the rules have none); with
`--scope`, also the scope model path (factlab/checkers/scope.py) alone and the whole layer (rules + both models).

Per gold logic finding (causal_from_correlation, scope_widening, conclusion_overreach, dropped_qualifier): found when
the engine flags the finding's paragraph (`found`), with the kind that answers it (`right kind`: causal_overclaim for
causal_from_correlation; scope_shift / carried_over for scope_widening and dropped_qualifier; overgeneralisation for
conclusion_overreach). Per flag: `precision` = flags on a paragraph that holds a gold logic finding / all flags;
false alarms = flags in the 24 clean documents. 95% bootstrap intervals over documents. The model was trained on
public English sentences only; nothing here was tuned on this gold (min_prob is the head's 0.5 by default).
Writes outputs/benchmarks/independent_logic/results.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "datasets" / "layers" / "independent" / "documents.jsonl"
OUT = Path("outputs/benchmarks/independent_logic")
ANSWERS = {"causal_from_correlation": {"causal_overclaim"}, "scope_widening": {"scope_shift", "carried_over"},
           "dropped_qualifier": {"scope_shift", "carried_over"}, "conclusion_overreach": {"overgeneralisation"}}


def score(docs: list[dict], flags: dict[str, dict[int, list[str]]], answers: dict[str, set[str]] = ANSWERS) -> dict:
    """found / right kind per gold finding of the kinds in `answers` (gold kind -> the layer kinds that answer it),
    precision per flag, false alarms on clean documents. `flags`: doc id -> 1-based paragraph -> the kinds raised."""
    findings = [(d["doc_id"], f) for d in docs for f in d["findings"] if f["kind"] in answers]
    found = [bool(flags[doc].get(f["paragraph"])) for doc, f in findings]
    right = [bool(set(flags[doc].get(f["paragraph"], [])) & answers[f["kind"]]) for doc, f in findings]
    gold_paragraphs = {(d["doc_id"], f["paragraph"]) for d in docs for f in d["findings"] if f["kind"] in answers}
    all_flags = [(d["doc_id"], p) for d in docs for p, kinds in flags[d["doc_id"]].items() for _ in kinds]
    clean = [d["doc_id"] for d in docs if not d["findings"]]
    return {"findings": len(findings), "found": sum(found) / len(findings) if findings else 0.0,
            "right_kind": sum(right) / len(findings) if findings else 0.0,
            "flags": len(all_flags),
            "precision": (sum((doc, p) in gold_paragraphs for doc, p in all_flags) / len(all_flags)
                          if all_flags else 0.0),
            "false_alarms_clean": sum(len(kinds) for doc in clean for kinds in flags[doc].values()),
            "clean_docs": len(clean)}


def save(out: Path, results: dict) -> None:
    """Write `results` as out/results.json and say where."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"written: {out / 'results.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--model", default="factlab:causal-strength-e5s-v1")
    parser.add_argument("--min-prob", type=float, default=0.5)
    parser.add_argument("--window", type=int, default=1, help="paragraphs before that may hold the premise; -1 = all")
    parser.add_argument("--min-overlap", type=float, default=0.0, help="content-word share the premise must hold")
    parser.add_argument("--languages", nargs="+", default=["en"], help="paragraph languages the model path runs on")
    parser.add_argument("--premise", default="design", choices=("design", "model", "either"),
                        help="the model path's premise: design cues (default), a sentence the head reads as "
                             "correlational, or either")
    parser.add_argument("--scope", default=None, help="the scope model (a head folder or factlab:<name>); none = off")
    parser.add_argument("--scope-min-prob", type=float, default=0.5)
    parser.add_argument("--scope-languages", nargs="+", default=["en"])
    parser.add_argument("--scope-effect", default=None,
                        help="the causal-strength model a scope conclusion must be read as an effect by; none = off")
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()

    from factlab.checkers.strength import StrengthOverclaim
    from factlab.data.jsonl import read_jsonl
    from factlab.metrics import bootstrap_ci
    from factlab.rules.logic import LogicRules

    docs = read_jsonl(GOLD)
    rules = LogicRules()
    model = StrengthOverclaim(args.model, rules, args.min_prob, None if args.window < 0 else args.window,
                              args.min_overlap, args.languages, premise=args.premise)
    scope = None
    if args.scope:
        from factlab.checkers.scope import ScopeShift

        scope = ScopeShift(args.scope, rules, args.scope_min_prob, languages=args.scope_languages,
                           effect_model=args.scope_effect)
    engines: dict[str, dict[str, dict[int, list[str]]]] = {"rules": {}, "model": {}, "rules + model": {}}
    if scope is not None:
        engines.update({"scope model": {}, "rules + models": {}})
    seconds = {"rules": 0.0, "model": 0.0, "scope": 0.0}
    examples = []
    for doc in docs:
        paragraphs = doc["paragraphs"]
        for name in engines:
            engines[name][doc["doc_id"]] = {}
        for index in range(len(paragraphs)):
            started = time.perf_counter()
            by_rules = [i.kind for i in rules.check_paragraph(paragraphs[index], paragraphs[:index])]
            seconds["rules"] += time.perf_counter() - started
            started = time.perf_counter()
            by_model = model.check(paragraphs, index)
            seconds["model"] += time.perf_counter() - started
            both = by_rules + [i.kind for i in by_model if i.kind not in by_rules]
            started = time.perf_counter()
            by_scope = scope.check(paragraphs, index) if scope is not None else []
            seconds["scope"] += time.perf_counter() - started
            every = both + [i.kind for i in by_scope if i.kind not in both]
            for name, kinds in (("rules", by_rules), ("model", [i.kind for i in by_model]), ("rules + model", both),
                                ("scope model", [i.kind for i in by_scope]), ("rules + models", every)):
                if name in engines and kinds:
                    engines[name][doc["doc_id"]][index + 1] = kinds
            examples += [{"doc_id": doc["doc_id"], "paragraph": index + 1, "span": i.keyword, "premise": i.premise,
                          "reason": i.reason} for i in by_model + by_scope]
    n_paragraphs = sum(len(d["paragraphs"]) for d in docs)
    results: dict = {"gold": str(GOLD.relative_to(ROOT)), "documents": len(docs), "paragraphs": n_paragraphs,
                     "model": args.model, "min_prob": args.min_prob, "window": args.window,
                     "min_overlap": args.min_overlap, "languages": args.languages, "premise": args.premise,
                     "scope": args.scope,
                     "scope_min_prob": args.scope_min_prob, "scope_languages": args.scope_languages,
                     "scope_effect": args.scope_effect,
                     "ms_per_paragraph": {k: round(1000 * v / n_paragraphs, 2) for k, v in seconds.items()},
                     "engines": {}, "model_findings": examples}
    print(f"\nLogic layer on {GOLD.relative_to(ROOT)} ({len(docs)} documents, {n_paragraphs} paragraphs)\n")
    print("| engine | lang | logic findings | found | right kind | flags | precision | false alarms (clean docs) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, flags in engines.items():
        for lang in ("all", "en", "zh"):
            subset = [d for d in docs if lang == "all" or d["lang"] == lang]
            point = score(subset, flags)
            ci = bootstrap_ci(subset, lambda ds, flags=flags: score(ds, flags), ["found", "right_kind", "precision"],
                              args.bootstrap, 0, 0.95)
            results["engines"].setdefault(name, {})[lang] = {**point, "ci95": ci}
            print(f"| {name} | {lang} | {point['findings']} | {point['found']:.3f} [{ci['found'][0]:.2f}, "
                  f"{ci['found'][1]:.2f}] | {point['right_kind']:.3f} [{ci['right_kind'][0]:.2f}, "
                  f"{ci['right_kind'][1]:.2f}] | {point['flags']} | {point['precision']:.3f} "
                  f"[{ci['precision'][0]:.2f}, {ci['precision'][1]:.2f}] | {point['false_alarms_clean']} in "
                  f"{point['clean_docs']} |")
    print(f"\nms per paragraph: {results['ms_per_paragraph']}")
    save(OUT, results)


if __name__ == "__main__":
    main()
