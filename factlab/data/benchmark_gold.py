"""The hand-written gold of the deterministic layers' benchmarks (datasets/layers/, procedure and fields in
datasets/README.md), read and validated: the consistency layer, the common-cause grouping, the timeliness check and
the vertical checkers (with the vertical checkers' fixtures). The scoring is `factlab.evals.layer_gold`; the
printed tables are benchmarks/consistency_layer.py, common_cause.py, timeliness.py and vertical_checkers.py.

Each reader raises CaseError on the first bad line, naming the file, the line and the field (`file:line: field:
problem`), and keeps the ids unique.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.jsonl import read_jsonl
from factlab.data.loaders.build import REPO_ROOT
from factlab.schema import RELATIONS

LAYER_GOLD = REPO_ROOT / "datasets" / "layers"
CONSISTENCY_GOLD = LAYER_GOLD / "consistency_gold.jsonl"
COMMON_CAUSE_GOLD = LAYER_GOLD / "common_cause_gold.jsonl"
TIMELINESS_GOLD = LAYER_GOLD / "timeliness_gold.jsonl"
VERTICALS_GOLD = LAYER_GOLD / "verticals_gold.jsonl"
VERTICALS_FIXTURES = LAYER_GOLD / "verticals"

LANGS = ("en", "zh")  # the order of the benchmarks' tables
TIMELINESS_EFFECTS = ("support_kept", "support_downgraded", "no_change")
VERTICAL_CHECKERS = ("link", "lookup", "quote")
VERTICAL_RELATIONS = ("support", "contradict", "none")
_VERTICAL_FIELDS = {"case_id": str, "lang": str, "checker": str, "claim": str, "expect": dict, "note": str}
_VERTICAL_EXPECT = {"applies": bool, "relation": str, "review": bool, "keyword": (str, type(None))}
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _need(row: Mapping, key: str, kind: type | tuple, where: str, field: str, optional: bool = False):
    """`row[key]` checked to be a `kind` (a bool is not an int); None for a missing optional key."""
    if key not in row:
        if optional:
            return None
        raise CaseError(where, field, "missing")
    value = row[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise CaseError(where, field, f"expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _object(value: object, where: str, field: str = "(line)") -> dict:
    if not isinstance(value, dict):
        raise CaseError(where, field, f"expected a JSON object, got {type(value).__name__}")
    return value


def _document(doc: object, where: str) -> dict:
    """The fields every document-level gold line has: doc_id, lang, paragraphs (a list)."""
    _object(doc, where)
    if not _need(doc, "doc_id", str, where, "doc_id").strip():
        raise CaseError(where, "doc_id", "empty")
    if _need(doc, "lang", str, where, "lang") not in LANGS:
        raise CaseError(where, "lang", f"{doc['lang']!r} is not one of {', '.join(LANGS)}")
    if not _need(doc, "paragraphs", list, where, "paragraphs"):
        raise CaseError(where, "paragraphs", "expected at least one paragraph")
    return doc


def check_consistency_doc(doc: object, where: str) -> dict:
    """One consistency gold line: doc_id, lang, paragraphs (strings) and findings ({kind, keyword, paragraph})."""
    _document(doc, where)
    for i, paragraph in enumerate(doc["paragraphs"]):
        if not isinstance(paragraph, str):
            raise CaseError(where, f"paragraphs[{i}]", f"expected str, got {paragraph!r}")
    for i, finding in enumerate(_need(doc, "findings", list, where, "findings")):
        field = f"findings[{i}]"
        _object(finding, where, field)
        _need(finding, "kind", str, where, f"{field}.kind")
        _need(finding, "keyword", str, where, f"{field}.keyword")
        if not 1 <= _need(finding, "paragraph", int, where, f"{field}.paragraph") <= len(doc["paragraphs"]):
            raise CaseError(where, f"{field}.paragraph", f"expected 1..{len(doc['paragraphs'])}, "
                                                         f"got {finding['paragraph']}")
    return doc


def check_common_cause_doc(doc: object, where: str) -> dict:
    """One common-cause gold line: doc_id, lang, paragraphs (lists of claims {text, evidence: [[source, tier,
    relation], ...]}) and flagged ([[source, [paragraph numbers]], ...])."""
    _document(doc, where)
    for p, claims in enumerate(doc["paragraphs"]):
        if not isinstance(claims, list):
            raise CaseError(where, f"paragraphs[{p}]", f"expected a list of claims, got {claims!r}")
        for c, claim in enumerate(claims):
            field = f"paragraphs[{p}][{c}]"
            _object(claim, where, field)
            _need(claim, "text", str, where, f"{field}.text")
            for e, item in enumerate(_need(claim, "evidence", list, where, f"{field}.evidence")):
                if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                        and isinstance(item[1], int) and item[2] in RELATIONS):
                    raise CaseError(where, f"{field}.evidence[{e}]", f"expected [source_id, tier, relation], got "
                                                                     f"{item!r}")
    for i, item in enumerate(_need(doc, "flagged", list, where, "flagged")):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list)):
            raise CaseError(where, f"flagged[{i}]", f"expected [source_id, [paragraph numbers]], got {item!r}")
    return doc


def check_timeliness_case(case: object, where: str) -> dict:
    """One timeliness gold line: a claim, 1 to 3 sources, the judged snippets (verbatim parts of their source) and
    the expected effect with the newest source's id."""
    _object(case, where)
    _need(case, "case_id", str, where, "case_id")
    if _need(case, "lang", str, where, "lang") not in LANGS:
        raise CaseError(where, "lang", f"{case['lang']!r} is not one of {', '.join(LANGS)}")
    if not _need(case, "claim", str, where, "claim").strip():
        raise CaseError(where, "claim", "empty")
    sources = _need(case, "sources", list, where, "sources")
    if not 1 <= len(sources) <= 3:
        raise CaseError(where, "sources", f"1 to 3 source records, got {len(sources)}")
    ids = {}
    for i, source in enumerate(sources):
        field = f"sources[{i}]"
        if not isinstance(source, dict):
            raise CaseError(where, field, "expected a source record object")
        sid = _need(source, "source_id", str, where, f"{field}.source_id")
        _need(source, "title", str, where, f"{field}.title")
        text = _need(source, "text", str, where, f"{field}.text")
        _need(source, "year", int, where, f"{field}.year", optional=True)
        _need(source, "date", str, where, f"{field}.date", optional=True)
        tier = _need(source, "tier", int, where, f"{field}.tier", optional=True)
        if tier is not None and tier < 1:
            raise CaseError(where, f"{field}.tier", f"must be >= 1, got {tier}")
        ids[sid] = text
    judged = _need(case, "judged", list, where, "judged")
    if not judged:
        raise CaseError(where, "judged", "at least one judged snippet")
    for i, item in enumerate(judged):
        field = f"judged[{i}]"
        if not isinstance(item, dict):
            raise CaseError(where, field, "expected an object")
        sid = _need(item, "source_id", str, where, f"{field}.source_id")
        if sid not in ids:
            raise CaseError(where, f"{field}.source_id", f"{sid!r} is not among the case's sources")
        if _need(item, "text", str, where, f"{field}.text") not in ids[sid]:
            raise CaseError(where, f"{field}.text", f"not a verbatim part of source {sid!r}")
        if _need(item, "relation", str, where, f"{field}.relation") not in RELATIONS:
            raise CaseError(where, f"{field}.relation", f"{item['relation']!r} is not one of {', '.join(RELATIONS)}")
        _need(item, "confidence", (int, float), where, f"{field}.confidence", optional=True)
    expected = _need(case, "expected", dict, where, "expected")
    if _need(expected, "effect", str, where, "expected.effect") not in TIMELINESS_EFFECTS:
        raise CaseError(where, "expected.effect", f"{expected['effect']!r} is not one of "
                                                  f"{', '.join(TIMELINESS_EFFECTS)}")
    if "newest" not in expected:
        raise CaseError(where, "expected.newest", "missing (a source_id, or null when no source is dated)")
    if expected["newest"] is not None and expected["newest"] not in ids:
        raise CaseError(where, "expected.newest", f"{expected['newest']!r} is not among the case's sources")
    return case


def check_verticals_case(case: object, where: str) -> dict:
    """One vertical-checkers gold line: fields and their types, vocabularies, consistency of `expect`."""
    _object(case, where)
    for name in sorted(set(_VERTICAL_FIELDS) - set(case)):
        raise CaseError(where, name, "missing")
    for name in sorted(set(case) - set(_VERTICAL_FIELDS)):
        raise CaseError(where, name, f"unknown field (fields: {sorted(_VERTICAL_FIELDS)})")
    for name, kind in _VERTICAL_FIELDS.items():
        if not isinstance(case[name], kind):
            raise CaseError(where, name, f"must be {kind.__name__}, got {case[name]!r}")
    expect = case["expect"]
    for name in sorted(set(_VERTICAL_EXPECT) - set(expect)):
        raise CaseError(where, f"expect.{name}", "missing")
    for name in sorted(set(expect) - set(_VERTICAL_EXPECT)):
        raise CaseError(where, f"expect.{name}", f"unknown field (fields: {sorted(_VERTICAL_EXPECT)})")
    for name, kind in _VERTICAL_EXPECT.items():
        if not isinstance(expect[name], kind):
            raise CaseError(where, f"expect.{name}", f"wrong type: {expect[name]!r}")
    if not case["case_id"].strip():
        raise CaseError(where, "case_id", f"empty: {case['case_id']!r}")
    if case["lang"] not in LANGS:
        raise CaseError(where, "lang", f"{case['lang']!r} is not one of {LANGS}")
    if case["checker"] not in VERTICAL_CHECKERS:
        raise CaseError(where, "checker", f"{case['checker']!r} is not one of {VERTICAL_CHECKERS}")
    if expect["relation"] not in VERTICAL_RELATIONS:
        raise CaseError(where, "expect.relation", f"{expect['relation']!r} is not one of {VERTICAL_RELATIONS}")
    if not case["claim"].strip() or not case["note"].strip():
        raise CaseError(where, "claim" if not case["claim"].strip() else "note", "empty")
    if (case["lang"] == "zh") != bool(_CJK.search(case["claim"])):
        raise CaseError(where, "lang", f"{case['lang']!r} does not fit the claim's script")
    if not expect["applies"] and (expect["relation"] != "none" or expect["review"] or expect["keyword"]):
        raise CaseError(where, "expect", "a checker that does not apply answers nothing: relation none, no review, "
                                         "no keyword")
    if case["checker"] == "link" and expect["relation"] != "none":
        raise CaseError(where, "expect.relation", "the link checker never judges a claim: relation must be none")
    if expect["relation"] == "contradict" and not expect["keyword"]:
        raise CaseError(where, "expect.keyword", "a contradiction names the differing span")
    if expect["keyword"] is not None and expect["keyword"] not in case["claim"]:
        raise CaseError(where, "expect.keyword", f"{expect['keyword']!r} is not in the claim")
    return case


def _read(path: Path | str, check, id_field: str) -> list[dict]:
    rows = read_jsonl(path, check, id_field)
    if not rows:
        raise CaseError(str(path), "(file)", "expected at least one gold line, got none")
    return rows


def read_consistency_gold(path: Path | str = CONSISTENCY_GOLD) -> list[dict]:
    """The consistency layer's gold documents, each line validated (CaseError names file, line and field)."""
    return _read(path, check_consistency_doc, "doc_id")


def read_common_cause_gold(path: Path | str = COMMON_CAUSE_GOLD) -> list[dict]:
    """The common-cause grouping's gold documents, each line validated (CaseError names file, line and field)."""
    return _read(path, check_common_cause_doc, "doc_id")


def read_timeliness_gold(path: Path | str = TIMELINESS_GOLD) -> list[dict]:
    """The timeliness check's gold cases, each line validated (CaseError names file, line and field)."""
    return _read(path, check_timeliness_case, "case_id")


def read_verticals_gold(path: Path | str = VERTICALS_GOLD) -> list[dict]:
    """The vertical checkers' gold cases, each line validated (CaseError names file, line and field)."""
    return _read(path, check_verticals_case, "case_id")


def verticals_fixtures_missing(fixtures: Path = VERTICALS_FIXTURES) -> list[str]:
    """The vertical checkers' fixtures (phones.csv, sources.json, references/*.txt) that are not there."""
    need = [fixtures / "phones.csv", fixtures / "sources.json", fixtures / "references"]
    missing = [str(p) for p in need if not p.exists()]
    if (fixtures / "references").is_dir() and not list((fixtures / "references").glob("*.txt")):
        missing.append(str(fixtures / "references" / "*.txt"))
    return missing
