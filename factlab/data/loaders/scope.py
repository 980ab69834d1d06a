"""The scope of a science sentence: whom (or what) a finding is about, for the logic layer's scope-widening model.

Labels (`SCOPES`, narrowest first): `lab` (animals, cells, tissue, in vitro), `restricted` (a named group of people:
children, women, nurses, patients with a condition, the study's participants), `general` (people at large: humans,
people, adults, individuals, the public), and `none` (no population named). A finding widened from `lab` or
`restricted` to `general` is the scope shift the layer reports ("in mice ... treats patients").

Nobody has published sentences labelled this way, so the rows are built here from public text nobody here wrote:
the 45,952 sentences of the SciFact corpus's 5,183 PubMed abstracts (`scifact/hf_csv/corpus_train.csv`):

- **weak labels** from the words that name a population (`LAB`, `RESTRICTED`, `GENERAL` below): a sentence naming
  only one kind gets that label, one naming none gets `none`, a mixed or bare-"patients" sentence is left out (in an
  abstract "patients" is mostly the study's own sample, so it is neither general nor a named group);
- **contrastive edits** (the issue's "edit family"): the same sentence with its population phrase swapped for one of
  another kind ("in mice" -> "in humans" / "in older women"), labelled by the phrase put in. The model sees one
  sentence at several scopes, so what it learns is the scope, not the topic.

The word lists decide the labels, so the head is first a smoother reader of these lists; what it adds is e5's sense
of words the lists lack (murine, rodents, zebrafish larvae, 小鼠 zero-shot), and that is what the public MISSCI test
and the independently written gold measure (`benchmarks/scope_overreach.py`). Splits are by abstract (a sentence and
its edits share a split), seeded.
"""

from __future__ import annotations

import csv
import random
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from factlab.data.errors import DatasetConfigError
from factlab.data.loaders.build import resolve_path
from factlab.data.loaders.corpus_join import parse_sentences
from factlab.data.splits import assign_splits

SCOPES = ("none", "lab", "restricted", "general")
CORPUS = "scifact/hf_csv/corpus_train.csv"

LAB = re.compile(r"\b(mice|mouse|murine|rats?|rodents?|zebrafish|drosophila|fruit flies|nematodes?|C\. elegans|"
                 r"pigs?|piglets|dogs?|monkeys?|macaques?|primates?|sheep|rabbits?|hamsters?|in vitro|cell lines?|"
                 r"cultured (?:cells|neurons)|organoids?|xenografts?|yeast)\b", re.I)
RESTRICTED = re.compile(r"\b(children|adolescents|infants|newborns|neonates|women|men|elderly|older adults|"
                        r"pregnant women|postmenopausal women|veterans|nurses|students|athletes|smokers|volunteers|"
                        r"participants|subjects|(?:patients|people|adults|individuals) with [a-z-]+(?: [a-z-]+)?)\b",
                        re.I)
GENERAL = re.compile(r"\b(humans?|people|individuals|adults|the general population|everyone|the public)\b", re.I)
BARE_PATIENTS = re.compile(r"\bpatients\b", re.I)

# phrases put in by the edits, by the scope they give (several each, so no one word stands for a scope)
SWAPS = {
    "lab": ("mice", "rats", "cultured cells", "zebrafish", "cell lines", "rodents", "pigs", "monkeys"),
    "restricted": ("older women", "children", "adolescents", "nurses", "male smokers", "patients with diabetes",
                   "pregnant women", "athletes"),
    "general": ("humans", "people", "adults", "individuals", "the general population", "everyone", "the public"),
}


def scope_of(sentence: str) -> str | None:
    """The weak label of a sentence, or None when it names more than one kind of population (left out).

    >>> [scope_of(s) for s in ("Mice fed X lived longer.", "X helps people sleep.", "Nurses slept less.",
    ...                        "X binds Y.", "Mice and humans share X.")]
    ['lab', 'general', 'restricted', 'none', None]
    """
    lab, restricted = bool(LAB.search(sentence)), bool(RESTRICTED.search(sentence))
    general = bool(GENERAL.search(RESTRICTED.sub(" ", sentence)))
    kinds = [k for k, hit in (("lab", lab), ("restricted", restricted), ("general", general)) if hit]
    if len(kinds) > 1:
        return None
    if not kinds:
        return None if BARE_PATIENTS.search(sentence) else "none"
    return kinds[0]


def edits(sentence: str, scope: str, rng: random.Random) -> list[tuple[str, str]]:
    """The sentence with its first population phrase swapped for one of each other scope: [(text, scope)].

    >>> [s for _, s in edits("Mice fed X lived longer.", "lab", random.Random(0))]
    ['restricted', 'general']
    """
    pattern = {"lab": LAB, "restricted": RESTRICTED, "general": GENERAL}.get(scope)
    match = pattern.search(sentence) if pattern else None
    if match is None:
        return []
    out = []
    for other in ("lab", "restricted", "general"):
        if other != scope:
            phrase = rng.choice(SWAPS[other])
            if match.group(0)[:1].isupper():
                phrase = phrase[:1].upper() + phrase[1:]
            out.append((sentence[:match.start()] + phrase + sentence[match.end():], other))
    return out


def _abstracts(path: Path) -> list[tuple[str, list[str]]]:
    csv.field_size_limit(1 << 26)
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        for line, record in enumerate(csv.DictReader(fh), start=2):
            missing = next((field for field in ("doc_id", "abstract") if not record.get(field)), None)
            if missing:
                raise DatasetConfigError(f"{path}, line {line}: field {missing} is empty; expected a SciFact row")
            out.append((str(record["doc_id"]), parse_sentences(record["abstract"])))
    return out


def load(*, name: str, data_root: str, fractions: Mapping[str, float], seed: int, per_label: int = 1500,
         edits_per_sentence: bool = True, max_words: int = 60, max_rows: int | None = None) -> list[dict]:
    """Cases {case_id, lang, text, scope, source (weak / edit), split}: up to `per_label` weakly labelled sentences per
    scope (sampled with `seed`), plus their edits when `edits_per_sentence`; split by abstract; the first `max_rows`
    cases when set (a smoke run)."""
    path = resolve_path(data_root) / CORPUS
    if not path.is_file():
        raise DatasetConfigError(f"scope: {path} not found (FACTLAB_DATA_ROOT / data_root must hold {CORPUS}; "
                                 "../shared/data/README.md)")
    rng = random.Random(seed)
    by_scope: dict[str, list[tuple[str, int, str]]] = {s: [] for s in SCOPES}
    for doc_id, sentences in _abstracts(path):
        for i, sentence in enumerate(sentences):
            if 4 <= len(sentence.split()) <= max_words and (scope := scope_of(sentence)) is not None:
                by_scope[scope].append((doc_id, i, sentence))
    docs = sorted({doc for rows in by_scope.values() for doc, _, _ in rows})
    assignment = assign_splits([{"case_id": d, "lang": "en", "text": d} for d in docs], dict(fractions), seed)
    cases, counts = [], Counter()
    for scope in SCOPES:
        rows = by_scope[scope]
        for doc_id, i, sentence in rng.sample(rows, min(per_label, len(rows))):
            base = {"lang": "en", "split": assignment[doc_id]}
            cases.append({**base, "case_id": f"scifact-{doc_id}-{i}", "text": sentence, "scope": scope,
                          "source": "weak"})
            counts[(scope, "weak")] += 1
            if edits_per_sentence and scope != "none":
                for j, (text, other) in enumerate(edits(sentence, scope, rng)):
                    cases.append({**base, "case_id": f"scifact-{doc_id}-{i}-e{j}", "text": text, "scope": other,
                                  "source": "edit"})
                    counts[(other, "edit")] += 1
    if not cases:
        raise DatasetConfigError(f"scope: {path} gave no sentences")
    return cases[:max_rows] if max_rows else cases
