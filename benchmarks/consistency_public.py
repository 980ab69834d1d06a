# python benchmarks/consistency_public.py [--abstracts 5183] [--seed 0]
"""The consistency layer (factlab/rules/document.py) on public text nobody here wrote: the SciFact corpus's 5,183
PubMed abstracts (../shared/data/scifact), each sentence a paragraph (so every cross-paragraph check applies inside
one abstract), unedited and with one scripted edit of each family where the abstract allows it:

- `restated value` (restated_value, a check not on by default): a count stated twice with the same value and counted
  noun ("1,204 patients" in two sentences) gets its later mention changed by 7-30% (up or down, seeded): one count,
  two values.
- `transposed digits` (number_restated): the same, with two adjacent different digits of the later mention swapped.
- `unit switch` (unit_mismatch): a number-with-unit stated twice identically (parsed quantities: 10 mg ... 10 mg) gets
  the later mention's unit swapped for another of its dimension (mg -> g, ml -> l, cm -> mm, ...).
- `redefinition` (abbreviation): an abbreviation defined in the abstract ("Parkinson's disease (PD)") and used again
  later gets, at that later use, a second definition: the expansion another SciFact abstract gives the same letters
  ("peritoneal dialysis (PD)"), so both wordings are real ones.

The edit families are this benchmark's own (a script, like the issue asks: "edits applied by a script to public
abstracts"); the text around them is not. Recall = edited abstracts where the layer raises the edit's kind at the
edited sentence; false alarms = unedited abstracts with any finding, by kind (a published abstract may hold a real
inconsistency: read the examples in the results file). 95% bootstrap intervals over abstracts. The abstracts are cut
in two seeded halves: `--part dev` is the half whose findings were read while the checks were being written (the
first run showed the transposition check raising 94 findings on statistics such as 1.31 / 1.13), `--part test`
(the default) the half reported. Writes outputs/benchmarks/consistency_public/results.json.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_logic import save  # noqa: E402  (writes <out>/results.json)

OUT = Path("outputs/benchmarks/consistency_public")
UNIT_SWAPS = {"mg": "g", "g": "mg", "kg": "g", "µg": "mg", "ml": "l", "mL": "L", "l": "ml", "L": "mL", "cm": "mm",
              "mm": "cm", "m": "cm", "km": "m", "h": "min", "min": "h", "°C": "K", "ha": "acre"}
QUANTITY = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?)\s?(mg|g|kg|µg|ml|mL|l|L|cm|mm|m|km|°C|ha)(?![\w/])")
COUNT = re.compile(r"(?<![\w.,-])(?!(?:19|20)\d\d\b)(\d{1,3}(?:,\d{3})+|\d{3,})\s+([a-z][a-z-]{3,})")
DEFINITION = re.compile(r"\b([A-Za-z][A-Za-z\- ]{3,60}?)\s*\(([A-Z][A-Za-z0-9]{1,6})\)")


def _later(sentences: list[str], pattern: re.Pattern, key) -> tuple[int, re.Match] | None:
    """The first later sentence's match whose key equals an earlier sentence's (same value and noun / unit)."""
    seen: dict = {}
    for i, sentence in enumerate(sentences):
        for m in pattern.finditer(sentence):
            k = key(m)
            if k in seen and seen[k] != i:
                return i, m
            seen.setdefault(k, i)
    return None


def edit_restated(sentences: list[str], rng: random.Random, transpose: bool) -> tuple[list[str], int] | None:
    hit = _later(sentences, COUNT, lambda m: (m.group(1), m.group(2)))
    if hit is None:
        return None
    i, m = hit
    digits = m.group(1).replace(",", "")
    if transpose:
        pairs = [j for j in range(len(digits) - 1) if digits[j] != digits[j + 1] and not (j == 0 and digits[1] == "0")]
        if not pairs:
            return None
        j = rng.choice(pairs)
        new = digits[:j] + digits[j + 1] + digits[j] + digits[j + 2:]
    else:
        factor = 1 + rng.choice((-1, 1)) * rng.uniform(0.07, 0.30)
        new = str(max(100, round(int(digits) * factor)))
        if new == digits:
            return None
    if "," in m.group(1):
        new = f"{int(new):,}"
    text = sentences[i]
    return sentences[:i] + [text[:m.start(1)] + new + text[m.end(1):]] + sentences[i + 1:], i


def edit_unit(sentences: list[str], rng: random.Random) -> tuple[list[str], int] | None:
    hit = _later(sentences, QUANTITY, lambda m: (m.group(1), m.group(2)))
    if hit is None or hit[1].group(2) not in UNIT_SWAPS:
        return None
    i, m = hit
    text = sentences[i]
    return sentences[:i] + [text[:m.start(2)] + UNIT_SWAPS[m.group(2)] + text[m.end(2):]] + sentences[i + 1:], i


def edit_term(sentences: list[str], rng: random.Random) -> tuple[list[str], int] | None:
    """The first sentence tying a figure to a metric term (factlab.rules.document.TERM_GROUPS), restated as a new last
    sentence with the term swapped for another of its group (incidence -> prevalence): the text is the abstract's, the
    restatement ours."""
    from factlab.rules.document import _TERM_PATTERNS, TERM_GROUPS, _metric_mentions

    for sentence in sentences:
        for _, group, term, where in _metric_mentions("s", sentence):
            partners = [name for name, _ in TERM_GROUPS[group] if name != term and name.isascii() == term.isascii()]
            pattern = dict(_TERM_PATTERNS[group])[term]
            match = pattern.search(sentence, where.start, where.end)
            if partners and match:
                swapped = sentence[:match.start()] + rng.choice(partners) + sentence[match.end():]
                return sentences + [swapped], len(sentences)
    return None


def _same_words(a: str, b: str) -> bool:
    """Whether two expansions are one wording up to case, possessives, plurals and punctuation ("Alzheimer's disease"
    and "Alzheimer disease"), or one ends with the other: not a second meaning.

    >>> _same_words("Alzheimer's disease", "alzheimer disease"), _same_words("peritoneal dialysis", "Parkinson disease")
    (True, False)
    """
    def norm(text: str) -> str:
        words = re.sub(r"'s\b|[^a-z0-9 ]", " ", text.casefold()).split()
        return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)

    x, y = norm(a), norm(b)
    return x == y or x.endswith(y) or y.endswith(x)


def edit_redefinition(sentences: list[str], rng: random.Random,
                      expansions: dict[str, set[str]]) -> tuple[list[str], int] | None:
    for i, sentence in enumerate(sentences):
        for m in DEFINITION.finditer(sentence):
            abbr, words = m.group(2), m.group(1).strip()
            others = sorted(e for e in expansions.get(abbr, ()) if not _same_words(e, words))
            if not others:
                continue
            use = re.compile(rf"(?<![A-Za-z(]){re.escape(abbr)}(?![A-Za-z)])")
            for j in range(i + 1, len(sentences)):
                later = use.search(sentences[j])
                if later:
                    text = sentences[j]
                    new = f"{rng.choice(others)} ({abbr})"
                    return sentences[:j] + [text[:later.start()] + new + text[later.end():]] + sentences[j + 1:], j
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--abstracts", type=int, default=5183)
    parser.add_argument("--part", choices=("dev", "test", "all"), default="test",
                        help="the seeded half of the abstracts: dev (looked at while writing the checks) or test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()

    from factlab.data.loaders.build import resolve_path
    from factlab.data.loaders.scope import CORPUS, _abstracts
    from factlab.metrics import bootstrap_ci
    from factlab.rules.document import DEFAULT_KINDS, KINDS, _expansion, consistency_findings

    root = resolve_path(os.environ.get("FACTLAB_DATA_ROOT", "../shared/data"))
    rng = random.Random(args.seed)
    abstracts = [(doc, sents) for doc, sents in _abstracts(root / CORPUS) if len(sents) >= 2]
    rng.shuffle(abstracts)
    half = len(abstracts) // 2
    abstracts = {"dev": abstracts[:half], "test": abstracts[half:], "all": abstracts}[args.part][:args.abstracts]
    expansions: dict[str, set[str]] = defaultdict(set)
    for _, sents in abstracts:  # the expansions the corpus itself gives each abbreviation (its initials' words)
        for s in sents:
            for m in DEFINITION.finditer(s):
                term = _expansion(m.group(1), m.group(2))
                if term:
                    expansions[m.group(2)].add(term)

    def findings(sentences: list[str]):  # every check, the optional restated_value included; counted apart below
        return consistency_findings([(f"s{i}", s) for i, s in enumerate(sentences)], KINDS)

    families = {"restated value": ("restated_value", lambda s: edit_restated(s, rng, False)),
                "transposed digits": ("number_restated", lambda s: edit_restated(s, rng, True)),
                "unit switch": ("unit_mismatch", lambda s: edit_unit(s, rng)),
                "redefinition": ("abbreviation", lambda s: edit_redefinition(s, rng, expansions)),
                # its own generator, so the families above draw as they did before it was added
                "term swap": ("term_drift", lambda s: edit_term(s, term_rng))}
    term_rng = random.Random(1)
    started = time.perf_counter()
    clean, by_family = [], {name: [] for name in families}
    alarms_by_kind, examples = Counter(), []
    for doc, sents in abstracts:
        found = findings(sents)
        clean.append({"doc": doc, "flagged": float(any(f.kind in DEFAULT_KINDS for f in found))})
        alarms_by_kind.update(f.kind for f in found)
        if found and len(examples) < 30:
            examples.append({"doc": doc, "kind": found[0].kind, "message": found[0].message})
        for name, (kind, edit) in families.items():
            edited = edit(sents)
            if edited is not None:
                text, at = edited
                hit = any(f.kind == kind and f.paragraph_id == f"s{at}" for f in findings(text))
                by_family[name].append({"doc": doc, "found": float(hit), "sentence": text[at]})
    seconds = time.perf_counter() - started

    def mean(key):
        return lambda items: {key: sum(i[key] for i in items) / len(items) if items else 0.0}

    results: dict = {"part": args.part, "abstracts": len(abstracts), "seconds": round(seconds, 1), "families": {},
                     "false_alarms": {}, "false_alarm_examples": examples}
    print(f"\nConsistency layer on {len(abstracts)} SciFact abstracts ({args.part}; sentences as paragraphs), "
          f"{seconds:.1f} s\n")
    print("| scripted edit | expected kind | abstracts it applies to | found at the edited sentence [95%] |")
    print("|---|---|---|---|")
    for name, (kind, _) in families.items():
        items = by_family[name]
        point = mean("found")(items)["found"]
        ci = bootstrap_ci(items, mean("found"), ["found"], args.bootstrap, 0, 0.95)["found"] if items else (0, 0)
        results["families"][name] = {"kind": kind, "n": len(items), "found": point, "ci95": ci,
                                     "examples": [i["sentence"] for i in items if not i["found"]][:5]}
        print(f"| {name} | {kind} | {len(items)} | {point:.3f} [{ci[0]:.2f}, {ci[1]:.2f}] |")
    rate = mean("flagged")(clean)["flagged"]
    ci = bootstrap_ci(clean, mean("flagged"), ["flagged"], args.bootstrap, 0, 0.95)["flagged"]
    results["false_alarms"] = {"abstracts_flagged": rate, "ci95": ci, "by_kind": dict(alarms_by_kind)}
    print(f"\nunedited abstracts with any finding of the default checks: {rate:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] of "
          f"{len(clean)}; by kind "
          f"{dict(alarms_by_kind)}")
    save(OUT, results)


if __name__ == "__main__":
    main()
