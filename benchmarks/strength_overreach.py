# python benchmarks/strength_overreach.py [--model factlab:causal-strength-e5s-v1] [--abstracts 300]
"""The logic layer's overreach path (factlab/checkers/strength.py: a conclusion the causal-strength head reads as a
direct cause, resting on an earlier premise) with each way of finding the premise, side by side in one run, on public
data the head was never trained or tuned on:

- `design`: the rules' observational-design cues (the default path, `logic=rules_strength`);
- `model`: a sentence the head reads as `correlational` (strength(conclusion) > strength(premise), as the
  exaggeration data frames it);
- `either`.

1. **InSciOut test** (Wright & Augenstein 2021, 563 pairs): each pair as a two-paragraph document, the abstract's
   conclusion then the press release's; the press paragraph is checked (its premise may be in the abstract, the
   window of one paragraph). Positive = the annotators' "exaggerates". Precision / recall / F1, 95% bootstrap.
2. **Public abstracts** (the SciFact corpus's abstracts of the scope dataset's test split, as
   benchmarks/scope_overreach.py draws them; the head trained on other PubMed conclusions, causal_language_pubmed):
   unedited, each abstract one paragraph (share flagged: false alarms, since a published abstract may overclaim but
   mostly does not); and a scripted edit: the last sentence stating an association ("was associated with",
   "correlated with") rewritten as a cause ("caused"); found = the edited sentence flagged.
Writes outputs/benchmarks/strength_overreach/results.json.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_logic import save  # noqa: E402  (writes <out>/results.json)
from scope_overreach import held_out_abstracts, prf  # noqa: E402

OUT = Path("outputs/benchmarks/strength_overreach")
PATHS = ("design", "model", "either")
# an association stated in an abstract, and its causal rewrite (tense kept)
ASSOCIATION = re.compile(r"\b(was|were|is|are)\s+(?:(?:significantly|independently|strongly|positively|inversely|"
                         r"also|not)\s+)?(?:associated|correlated)\s+with\b", re.IGNORECASE)
CAUSAL = {"was": "caused", "were": "caused", "is": "causes", "are": "cause"}


def causal_edit(sentence: str) -> str | None:
    """The sentence with its first stated association rewritten as a cause; None when it states none (or a negation).

    >>> causal_edit("Smoking was significantly associated with stroke.")
    'Smoking caused stroke.'
    >>> causal_edit("BMI is correlated with risk.")
    'BMI causes risk.'
    >>> causal_edit("X was not associated with Y.") is None
    True
    """
    match = ASSOCIATION.search(sentence)
    if not match or re.search(r"\bnot\b", match.group(0), re.IGNORECASE):
        return None
    return sentence[:match.start()] + CAUSAL[match.group(1).lower()] + sentence[match.end():]


def abstracts(root: Path, n: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(unedited, edited): up to `n` test-split abstracts of >= 3 sentences each, and up to `n` with the causal
    rewrite of the last sentence stating an association (after the first sentence: a premise may precede it)."""
    clean, edited = [], []
    for doc, sents in held_out_abstracts(root, random.Random(seed)):
        if len(clean) < n:
            clean.append({"doc": doc, "paragraphs": [" ".join(sents)]})
        for i in range(len(sents) - 1, 0, -1):
            rewritten = causal_edit(sents[i])
            if rewritten and len(edited) < n:
                edited.append({"doc": doc, "paragraphs": [" ".join(sents[:i] + [rewritten] + sents[i + 1:])],
                               "edited": rewritten})
                break
    return clean, edited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--model", default="factlab:causal-strength-e5s-v1")
    parser.add_argument("--abstracts", type=int, default=300)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()

    from factlab.checkers.strength import StrengthOverclaim, head_from
    from factlab.data.loaders.build import resolve_path
    from factlab.data.loaders.causal_strength import data_file, insciout_pairs
    from factlab.metrics import bootstrap_ci
    from factlab.rules.logic import LogicRules
    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    root = resolve_path(os.environ.get("FACTLAB_DATA_ROOT", "../shared/data"))
    head, rules = head_from(args.model), LogicRules()
    layers = {path: StrengthOverclaim(head, rules, premise=path) for path in PATHS}
    results: dict = {"model": args.model, "seconds": {}}

    def ci(items, stat, names):
        return bootstrap_ci(items, stat, names, args.bootstrap, 0, 0.95)

    # 1. InSciOut test pairs as two-paragraph documents
    pairs = insciout_pairs(data_file(root, "insciout_test"))
    for path, layer in layers.items():
        started = time.perf_counter()
        for pair in pairs:
            found = layer.check([pair["abstract"], pair["press"]], 1)
            pair[path] = bool(found)
        results["seconds"][f"insciout_{path}"] = round(time.perf_counter() - started, 1)
    gold = [p["exaggeration"] == "exaggerates" for p in pairs]
    print(f"\nInSciOut test: {len(pairs)} (abstract, press release) pairs, {sum(gold)} exaggerate\n")
    print("| premise | flagged | precision | recall | F1 [95%] |\n|---|---|---|---|---|")
    results["insciout"] = {}
    for path in PATHS:
        units = [(g, p[path]) for g, p in zip(gold, pairs, strict=True)]
        stat = lambda us: prf([u[0] for u in us], [u[1] for u in us])  # noqa: E731
        point, interval = stat(units), ci(units, stat, ["f1", "precision", "recall"])
        results["insciout"][path] = {**point, "ci95": interval}
        print(f"| {path} | {point['flagged']} | {point['precision']:.3f} | {point['recall']:.3f} | "
              f"{point['f1']:.3f} [{interval['f1'][0]:.2f}, {interval['f1'][1]:.2f}] |")

    # 2. public abstracts, unedited and with the causal rewrite
    clean, edited = abstracts(root, args.abstracts)
    for path, layer in layers.items():
        started = time.perf_counter()
        for item in clean:
            item[path] = bool(layer.check(item["paragraphs"], 0))
        for item in edited:
            item[path] = any(i.keyword.strip() == item["edited"].strip() for i in layer.check(item["paragraphs"], 0))
        results["seconds"][f"abstracts_{path}"] = round(time.perf_counter() - started, 1)
    print(f"\nSciFact corpus abstracts (test split): {len(clean)} unedited, {len(edited)} with an association "
          "rewritten as a cause\n")
    print("| premise | unedited flagged [95%] | edited sentence found [95%] |\n|---|---|---|")
    results["abstracts"] = {"unedited": len(clean), "edited": len(edited)}
    for path in PATHS:
        rate = lambda items, path=path: {"rate": sum(i[path] for i in items) / len(items) if items else 0.0}  # noqa: E731
        a, b = rate(clean)["rate"], rate(edited)["rate"]
        ca, cb = ci(clean, rate, ["rate"])["rate"], ci(edited, rate, ["rate"])["rate"]
        results["abstracts"][path] = {"unedited_flagged": a, "unedited_ci95": ca, "edited_found": b,
                                      "edited_ci95": cb}
        print(f"| {path} | {a:.3f} [{ca[0]:.2f}, {ca[1]:.2f}] | {b:.3f} [{cb[0]:.2f}, {cb[1]:.2f}] |")
    # the default logic layer as the checkers run it (logic=rules_strength: the rules, then the design path where
    # they found no causal_overclaim) and the rules alone, on the same unedited abstracts: any finding of any kind
    from factlab.checkers.logic import LogicLayer

    for name, layer in (("rules (logic=rules)", LogicLayer(rules)),
                        ("default layer (logic=rules_strength)", LogicLayer(rules, strength=layers["design"]))):
        flagged = [{"rate": float(bool(layer.check(item["paragraphs"], 0)))} for item in clean]
        rate = sum(f["rate"] for f in flagged) / len(flagged)
        interval = ci(flagged, lambda items: {"rate": sum(i["rate"] for i in items) / len(items)}, ["rate"])["rate"]
        results["abstracts"][name] = {"unedited_any_finding": rate, "ci95": interval}
        print(f"{name}: unedited abstracts with any logic finding {rate:.3f} [{interval[0]:.2f}, {interval[1]:.2f}]")
    print(f"\nseconds: {results['seconds']}")
    save(OUT, results)


if __name__ == "__main__":
    main()
