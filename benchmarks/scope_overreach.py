# python benchmarks/scope_overreach.py [--scope factlab:scope-e5s-v1] [--abstracts 300]
"""The scope model (factlab:scope-e5s-v1, factlab/checkers/scope.py) against the cue-word rules on public data nobody
here wrote, never trained or tuned on:

1. **MISSCI** (Glockner et al., ACL 2024; ../shared/data/missci, dev + test): each fallacy of a misrepresented study
   comes with its context (what the study really was: "The results were observed in vitro") and the claim that
   misrepresents it. A pair (context, claim) is a scope widening when its fallacy class is one of the two classes
   that carry a finding from a part to a whole: Biased Sample Fallacy and Fallacy of Division/Composition (chosen from
   the class definitions, before any run); every other class with a context is a negative. Two readings:
   `wider` = the claim's scope is read wider than the context's (the layer's own test); `dropped` = the context is
   read as lab or restricted and the claim is not (MISSCI's claims seldom name a population: "Garlic is 100 times
   more effective than antibiotics"). The rules read scope with their `restricted` / `wider` cue lists.
2. **Unedited public abstracts** (the SciFact corpus's abstracts of the scope dataset's test split: sentences the model
   never trained on): the share of abstracts the layer's scope path flags when each abstract is one paragraph
   (false alarms, since a published abstract may widen a scope but mostly states it) and the same abstracts with a
   scripted widening (the last sentence naming a lab or restricted population gets that phrase swapped for a
   general one, as the training edits do: so this row is in the training distribution, a check of the layer's
   premise search, hedge and experiment rules, not of generalisation).

95% bootstrap intervals over pairs / abstracts. Writes outputs/benchmarks/scope_overreach/results.json.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_logic import save  # noqa: E402  (writes <out>/results.json)

OUT = Path("outputs/benchmarks/scope_overreach")
SCOPE_CLASSES = {"Biased Sample Fallacy", "Fallacy of Division/Composition"}


def missci_pairs(root: Path) -> list[dict]:
    """(context, claim, positive, class, split) per fallacy with a non-empty context, dev + test."""
    from factlab.data.jsonl import read_jsonl

    pairs = []
    for split in ("dev", "test"):
        for arg in read_jsonl(root / "missci" / "dataset" / f"{split}.missci.jsonl"):
            claim = arg["argument"]["claim"]
            for fallacy in arg["argument"]["fallacies"]:
                context = (fallacy.get("fallacy_context") or "").strip()
                classes = {f["class"] for f in fallacy["interchangeable_fallacies"]}
                if context:
                    pairs.append({"context": context, "claim": claim, "positive": bool(classes & SCOPE_CLASSES),
                                  "classes": sorted(classes), "split": split})
    return pairs


def held_out_abstracts(root: Path, rng: random.Random) -> list[tuple[str, list[str]]]:
    """(doc id, sentences) of the SciFact-corpus abstracts (3 sentences or more) in the scope dataset's test split (by
    abstract, seed 0), shuffled with `rng`: the public abstracts every layer benchmark draws its unedited rows from."""
    from factlab.data.loaders.scope import CORPUS, _abstracts
    from factlab.data.splits import assign_splits

    docs = [(doc, sents) for doc, sents in _abstracts(root / CORPUS) if len(sents) >= 3]
    split = assign_splits([{"case_id": d, "lang": "en", "text": d} for d, _ in docs],
                          {"train": 0.7, "val": 0.15, "test": 0.15}, 0)
    test = [(doc, sents) for doc, sents in docs if split[doc] == "test"]
    rng.shuffle(test)
    return test


def prf(gold: list[bool], pred: list[bool]) -> dict:
    tp = sum(g and p for g, p in zip(gold, pred, strict=True))
    precision = tp / sum(pred) if sum(pred) else 0.0
    recall = tp / sum(gold) if sum(gold) else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "flagged": sum(pred), "positives": sum(gold),
            "n": len(gold)}


def scored(items: list[dict], key: str) -> dict:
    return prf([i["positive"] for i in items], [i[key] for i in items])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--scope", default="factlab:scope-e5s-v1")
    parser.add_argument("--min-prob", type=float, default=0.5)
    parser.add_argument("--effect", default=None, help="the layer's effect model for the abstract rows (none = off)")
    parser.add_argument("--abstracts", type=int, default=300, help="test-split abstracts for the clean / edited rows")
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()

    from factlab.checkers.scope import RANK, ScopeShift
    from factlab.data.loaders.build import resolve_path
    from factlab.data.loaders.scope import GENERAL, LAB, RESTRICTED, SWAPS
    from factlab.metrics import bootstrap_ci
    from factlab.rules.logic import LogicRules

    root = resolve_path(os.environ.get("FACTLAB_DATA_ROOT", "../shared/data"))
    rules = LogicRules()
    layer = ScopeShift(args.scope, rules, args.min_prob, effect_model=args.effect)
    results: dict = {"scope": args.scope, "min_prob": args.min_prob, "effect": args.effect}

    # 1. MISSCI
    pairs = missci_pairs(root)
    started = time.perf_counter()
    read = layer.scopes([t for p in pairs for t in (p["context"], p["claim"])])
    for pair, (ctx, cl) in zip(pairs, zip(read[0::2], read[1::2], strict=True), strict=True):
        pair["model_scope"] = [ctx[0], cl[0]]
        pair["model_wider"] = ctx[0] in RANK and cl[0] in RANK and RANK[cl[0]] > RANK[ctx[0]]
        pair["model_dropped"] = ctx[0] in ("lab", "restricted") and cl[0] not in ("lab", "restricted")
        restricted = bool(rules.cue("restricted", pair["context"]))
        pair["rules_wider"] = restricted and bool(rules.cue("wider", pair["claim"]))
        pair["rules_dropped"] = restricted and not rules.cue("restricted", pair["claim"])
    results["missci_seconds"] = round(time.perf_counter() - started, 1)
    print(f"\nMISSCI dev + test: {len(pairs)} (context, claim) pairs, {sum(p['positive'] for p in pairs)} of the "
          f"scope classes ({', '.join(sorted(SCOPE_CLASSES))})\n")
    print("| reader | reading | flagged | precision | recall | F1 [95%] |")
    print("|---|---|---|---|---|---|")
    results["missci"] = {}
    for key in ("rules_wider", "rules_dropped", "model_wider", "model_dropped"):
        point = scored(pairs, key)
        ci = bootstrap_ci(pairs, lambda items, key=key: scored(items, key), ["f1", "precision", "recall"],
                          args.bootstrap, 0, 0.95)
        results["missci"][key] = {**point, "ci95": ci}
        reader, reading = key.split("_")
        print(f"| {reader} | {reading} | {point['flagged']} | {point['precision']:.3f} | {point['recall']:.3f} | "
              f"{point['f1']:.3f} [{ci['f1'][0]:.2f}, {ci['f1'][1]:.2f}] |")
    base = sum(p["positive"] for p in pairs) / len(pairs)
    print(f"\n(flag every pair: precision {base:.3f}, recall 1, F1 {2 * base / (1 + base):.3f})")
    results["missci"]["flag_all_f1"] = 2 * base / (1 + base)
    results["missci_examples"] = [{k: p[k] for k in ("context", "claim", "classes", "model_scope", "positive")}
                                  for p in pairs if p["positive"] or p["model_dropped"]][:40]

    # 2. unedited and scripted-edit abstracts (the scope dataset's test split, by abstract)
    rng = random.Random(0)
    test = held_out_abstracts(root, rng)
    clean, edited = [], []
    for doc, sents in test:
        if len(clean) < args.abstracts:
            clean.append({"doc": doc, "text": " ".join(sents)})
        for i in range(len(sents) - 1, 0, -1):
            match = LAB.search(sents[i]) or RESTRICTED.search(sents[i])
            if match and not GENERAL.search(sents[i]) and len(edited) < args.abstracts:
                widened = sents[i][:match.start()] + rng.choice(SWAPS["general"]) + sents[i][match.end():]
                edited.append({"doc": doc, "text": " ".join(sents[:i] + [widened] + sents[i + 1:]),
                               "premise_in_text": any(LAB.search(s) or RESTRICTED.search(s) for s in sents[:i])})
                break
    started = time.perf_counter()
    for item in clean + edited:
        item["flagged"] = bool(layer.check([item["text"]], 0))
    results["abstract_seconds"] = round(time.perf_counter() - started, 1)
    rate = lambda items: {"rate": sum(i["flagged"] for i in items) / len(items) if items else 0.0}  # noqa: E731
    print("\n| abstracts (SciFact corpus, test split) | n | flagged by the scope path [95%] |")
    print("|---|---|---|")
    for name, items in (("unedited (false alarms)", clean), ("last population sentence widened (scripted)", edited),
                        ("  of which an earlier sentence names a population", [i for i in edited
                                                                                if i["premise_in_text"]])):
        point = rate(items)
        ci = bootstrap_ci(items, rate, ["rate"], args.bootstrap, 0, 0.95) if items else {"rate": [0.0, 0.0]}
        results.setdefault("abstracts", {})[name.strip()] = {"n": len(items), **point, "ci95": ci}
        print(f"| {name} | {len(items)} | {point['rate']:.3f} [{ci['rate'][0]:.2f}, {ci['rate'][1]:.2f}] |")
    print(f"\nseconds: MISSCI {results['missci_seconds']}, abstracts {results['abstract_seconds']}")
    save(OUT, results)


if __name__ == "__main__":
    main()
