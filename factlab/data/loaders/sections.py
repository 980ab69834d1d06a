"""Paragraph types (the routing table's key): the written gold (datasets/layers/paragraph_types.jsonl, both
languages, all four types) and, when the public data is there, the sections of SciFact's structured abstracts, each
section a paragraph typed by its heading (BACKGROUND -> background, METHODS -> method, RESULTS / CONCLUSIONS ->
results, LIMITATIONS -> limitations; ambiguous headings such as "METHODS AND RESULTS" are skipped). The heading is
removed from the text, so a model cannot read the answer off it.

Splits: SciFact by abstract (the sections of one abstract share a split), the written gold by case, both with the
config's `fractions` and seed.
"""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Mapping
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.jsonl import read_jsonl
from factlab.data.loaders.build import resolve_path
from factlab.data.loaders.corpus_join import parse_sentences
from factlab.data.splits import assign_splits, seeded_sample
from factlab.schema import LANGUAGES

logger = logging.getLogger(__name__)

TYPES = ("background", "method", "results", "limitations")
HEADINGS = {
    "background": ("BACKGROUND", "INTRODUCTION", "CONTEXT", "OBJECTIVE", "OBJECTIVES", "PURPOSE", "AIM", "AIMS",
                   "IMPORTANCE", "RATIONALE", "MOTIVATION", "BACKGROUND & AIMS", "BACKGROUND AND AIMS",
                   "BACKGROUND AND PURPOSE", "BACKGROUND/AIMS", "PURPOSE OF REVIEW", "STUDY OBJECTIVE"),
    "method": ("METHOD", "METHODS", "METHODOLOGY", "DESIGN", "SETTING", "PARTICIPANTS", "PATIENTS", "SUBJECTS",
               "MATERIALS AND METHODS", "METHODS AND MATERIALS", "INTERVENTION", "INTERVENTIONS", "MEASUREMENTS",
               "MAIN OUTCOME MEASURES", "MAIN OUTCOMES AND MEASURES", "STUDY DESIGN", "EXPERIMENTAL DESIGN",
               "DESIGN, SETTING, AND PARTICIPANTS", "DESIGN AND METHODS", "APPROACH", "PATIENTS AND METHODS"),
    "results": ("RESULTS", "FINDINGS", "MAIN RESULTS", "CONCLUSION", "CONCLUSIONS", "INTERPRETATION", "DISCUSSION",
                "CONCLUSIONS AND RELEVANCE", "SIGNIFICANCE", "RESULTS AND CONCLUSIONS"),
    "limitations": ("LIMITATIONS", "LIMITATION"),
}
_BY_HEADING = {h: kind for kind, heads in HEADINGS.items() for h in heads}
_HEADING = re.compile(r"^([A-Z][A-Z ,&/]*[A-Z])\s+(?=[A-Z0-9(][a-z0-9])")
_GOLD_FIELDS = {"case_id": str, "lang": str, "text": str, "paragraph_type": str}


def sections(sentences: list[str]) -> list[tuple[str, str]]:
    """(heading, text without it) of each section of a structured abstract, in order.

    >>> sections(["BACKGROUND Rates rose.", "More so.", "METHODS We counted.", "RESULTS Ten died."])
    [('BACKGROUND', 'Rates rose. More so.'), ('METHODS', 'We counted.'), ('RESULTS', 'Ten died.')]
    """
    out: list[tuple[str, list[str]]] = []
    for sentence in sentences:
        match = _HEADING.match(sentence)
        if match:
            out.append((match.group(1), [sentence[match.end():]]))
        elif out:
            out[-1][1].append(sentence)
    return [(heading, " ".join(s.strip() for s in texts)) for heading, texts in out]


def _check_gold(case: object, where: str) -> dict:
    if not isinstance(case, dict):
        raise CaseError(where, "(line)", "expected an object")
    for key, kind in _GOLD_FIELDS.items():
        if not isinstance(case.get(key), kind) or not case[key].strip():
            raise CaseError(where, key, f"expected a non-empty {kind.__name__}")
    if set(case) - set(_GOLD_FIELDS):
        raise CaseError(where, sorted(set(case) - set(_GOLD_FIELDS))[0], "unknown field")
    if case["lang"] not in LANGUAGES:
        raise CaseError(where, "lang", f"expected one of {list(LANGUAGES)}, got {case['lang']!r}")
    if case["paragraph_type"] not in TYPES:
        raise CaseError(where, "paragraph_type", f"expected one of {list(TYPES)}, got {case['paragraph_type']!r}")
    return case


def read_gold(path: Path) -> list[dict]:
    """The written gold, each line validated (a bad line raises CaseError naming file, line and field)."""
    return read_jsonl(path, _check_gold, "case_id")


def scifact_sections(path: Path, max_sections: int | None, seed: int) -> list[dict]:
    """Typed sections of SciFact's structured abstracts (case_id scifact-<doc>-<i>, `doc` for the split)."""
    csv.field_size_limit(1 << 30)
    rows = []
    with path.open(encoding="utf-8", newline="") as fh:
        for record in csv.DictReader(fh):
            if str(record.get("structured", "")).lower() not in ("true", "1"):
                continue
            for index, (heading, text) in enumerate(sections(parse_sentences(record["abstract"]))):
                kind = _BY_HEADING.get(heading)
                if kind and len(text) >= 40:
                    rows.append({"case_id": f"scifact-{record['doc_id']}-{index}", "lang": "en", "text": text,
                                 "paragraph_type": kind, "doc": f"scifact-{record['doc_id']}"})
    return seeded_sample(rows, max_sections, seed)


def load(*, name: str, gold: str, fractions: Mapping[str, float], seed: int, public: Mapping | None = None,
         max_rows: int | None = None) -> list[dict]:
    """The written gold plus (when `public.data_root` exists) SciFact's typed sections, each case with its split."""
    cases = read_gold(resolve_path(gold))[:max_rows]
    units = [{"case_id": c["case_id"], "lang": c["lang"], "text": c["case_id"]}
             for c in cases]
    if public:
        root = resolve_path(public["data_root"])
        if (root / public["file"]).exists():
            cases += scifact_sections(root / public["file"], public.get("max_sections"), seed)[:max_rows]
        else:
            logger.warning("conf/dataset/%s.yaml: %s not found: only the written gold is used", name,
                           root / public["file"])
    docs = {c.get("doc", c["case_id"]) for c in cases}
    units += [{"case_id": d, "lang": "en", "text": d} for d in sorted(docs) if d.startswith("scifact-")]
    assignment = assign_splits(units, dict(fractions), seed)
    return [{**{k: v for k, v in c.items() if k != "doc"}, "split": assignment[c.get("doc", c["case_id"])]}
            for c in cases]
