"""Load case JSONL files (schema: datasets/README.md) into plain dicts, validating every row and its corpus.

Every problem raises `CaseError` naming the file, the 1-based line, the field path (``claims[2].relation``) and
expected vs got. Beyond field types, each case is checked for consistency: claim sentences and gold sentences are
verbatim substrings of `text`, paragraph offsets are ascending and inside `text`, and every evidence item points
at an existing source (``<source_id>#p<page>-c<n>``) whose page contains the evidence text verbatim.

In memory a case always carries `sources`: its inline list, or the records of its `corpus` file (loaded once per
file and shared by all cases that name it; `corpus` stays as written, so the case still serialises as it was read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.rows import read_rows
from factlab.matching.segment import sentence_spans
from factlab.schema import DEFAULT_VERTICALS, LABELS, LANGUAGES, RELATIONS, normalise_relation

ERROR_TYPES: tuple[str, ...] = (
    "citation_splicing", "invented_statistic", "extrapolation", "outdated", "dropped_qualifier", "correct",
    "opinion", "multi_hop",
)
REVIEW_ACTIONS: tuple[str, ...] = ("keep", "fix", "drop")
REVIEW_FLAWS: tuple[str, ...] = ("wrong_subject", "lost_qualifier", "unsupported_addition", "none")
SPLITS: tuple[str, ...] = ("train", "val", "test")
SOURCE_ID_RE = re.compile(r"[a-z0-9-]+")
CHUNK_ID_RE = re.compile(r"(?P<source>.+)#p(?P<page>[1-9][0-9]*)-c(?P<chunk>[1-9][0-9]*)")
LABEL_HELP = ("labels are factlab.schema.LABELS; an upstream dataset maps its own labels in the `labels` table "
              "of conf/dataset/<name>.yaml")

# field -> (accepted JSON types, required). bool is checked apart from int (True is an int in Python).
_CASE_FIELDS = {
    "case_id": (str, True), "lang": (str, True), "text": (str, True), "vertical": (str, False),
    "error_type": (str, False), "paragraphs": (list, False), "sentences": (list, False), "claims": (list, False),
    "review": (list, False), "corpus": (str, False), "sources": (list, False), "split": (str, False),
    "provenance": (dict, False),  # where a reflowed row came from (scripts/reflow.py): run id, case id, method
}
_CLAIM_FIELDS = {
    "claim_id": (str, True), "text": (str, True), "sentence": (str, False), "paragraph": (int, False),
    "checkworthy": (bool, False), "vertical": (str, False), "queries": (list, False), "evidence": (list, False),
    "relation": (str, False), "label": (str, False), "error_type": (str, False), "multi_hop": (bool, False),
}
_EVIDENCE_FIELDS = {
    "source_id": (str, True), "chunk_id": (str, True), "text": (str, True), "tier": (int, False),
    "relation": (str, True),
}
_SENTENCE_FIELDS = {"text": (str, True), "checkworthy": (bool, True), "reason": (str, False)}
_REVIEW_FIELDS = {"draft": (str, True), "action": (str, True), "fixed": (str, False), "flaw": (str, False)}
SOURCE_FIELDS = {
    "source_id": (str, True), "text": (str, False), "pages": (list, False), "title": (str, True),
    "author": (str, False), "year": (int, False), "url": (str, False), "domain": (str, False), "doi": (str, False),
    "tier": (int, False), "vertical": (str, False), "lang": (str, False),
}


def _kind(value: object) -> str:
    """JSON-ish name of a value's type, for "expected X, got Y" messages.

    >>> _kind(True), _kind(3), _kind("a"), _kind(None), _kind([1])
    ('boolean', 'integer', 'string', 'null', 'list')
    """
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _show(value: object, limit: int = 80) -> str:
    """Short repr of a value for error messages.

    >>> _show("x" * 100, limit=10)
    "'xxxxxx..."
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_fields(obj: object, spec: dict, path: str, where: str) -> dict:
    """Check that obj is an object with exactly the known fields, required ones present, each of the right type."""
    if not isinstance(obj, dict):
        raise CaseError(where, path or "(row)", f"expected an object, got {_kind(obj)} {_show(obj)}")
    prefix = f"{path}." if path else ""
    for key in obj:
        if key not in spec:
            raise CaseError(where, prefix + str(key), f"unknown field; expected one of {', '.join(spec)}")
    for key, (types, required) in spec.items():
        if key not in obj:
            if required:
                raise CaseError(where, prefix + key, "missing required field")
            continue
        value = obj[key]
        wrong = not isinstance(value, types) or (isinstance(value, bool) and types is not bool)
        if wrong:
            names = {str: "string", int: "integer", bool: "boolean", list: "list", dict: "object"}
            raise CaseError(where, prefix + key, f"expected {names[types]}, got {_kind(value)} {_show(value)}")
        if types is str and required and not value.strip():
            raise CaseError(where, prefix + key, "expected a non-empty string, got ''")
    return obj


def _check_choice(value: str, allowed: Sequence[str], field: str, where: str, hint: str = "") -> None:
    if value not in allowed:
        raise CaseError(where, field, f"expected one of {', '.join(allowed)}, got {_show(value)}{hint}")


def _check_relation(value: str, field: str, where: str) -> None:
    if value in RELATIONS:
        return
    try:
        hint = f"; write {normalise_relation(value)!r}"
    except ValueError:
        hint = ""
    raise CaseError(where, field, f"expected one of {', '.join(RELATIONS)}, got {_show(value)}{hint}")


def _check_strings(values: list, field: str, where: str) -> None:
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            raise CaseError(where, f"{field}[{index}]", f"expected a non-empty string, got {_kind(value)} "
                                                        f"{_show(value)}")


def validate_source(record: object, where: str, path: str = "") -> dict:
    """Validate one source record (a corpus file line, or an item of a case's `sources`).

    Args:
        record: the parsed JSON value.
        where: file and line, for the error message.
        path: field path of the record inside its row ("" for a corpus line, ``sources[3]`` inline).

    Returns:
        The record, unchanged.

    Raises:
        CaseError: naming `where`, the field and expected vs got.
    """
    prefix = f"{path}." if path else ""
    _check_fields(record, SOURCE_FIELDS, path, where)
    if not SOURCE_ID_RE.fullmatch(record["source_id"]):
        raise CaseError(where, prefix + "source_id", f"expected [a-z0-9-]+, got {_show(record['source_id'])}")
    if ("text" in record) == ("pages" in record):
        raise CaseError(where, prefix + "text", "expected exactly one of `text` or `pages`, got "
                                                + ("both" if "text" in record else "neither"))
    if "pages" in record:
        if not record["pages"]:
            raise CaseError(where, prefix + "pages", "expected at least one page, got []")
        _check_strings(record["pages"], prefix + "pages", where)
    elif not record["text"].strip():
        raise CaseError(where, prefix + "text", "expected a non-empty string, got ''")
    if "tier" in record and record["tier"] not in (1, 2, 3):
        raise CaseError(where, prefix + "tier", f"expected 1, 2 or 3, got {_show(record['tier'])}")
    return record


def source_pages(record: dict) -> list[str]:
    """The pages of a source record (`text` is page 1).

    >>> source_pages({"source_id": "a", "title": "", "text": "one"})
    ['one']
    """
    return record["pages"] if "pages" in record else [record["text"]]


def index_sources(sources: Iterable[dict], where: str, path: str = "sources") -> dict[str, dict]:
    """Map source_id -> record, refusing duplicate ids."""
    index: dict[str, dict] = {}
    for position, record in enumerate(sources):
        if record["source_id"] in index:
            raise CaseError(where, f"{path}[{position}].source_id",
                            f"expected unique source ids, got {record['source_id']!r} twice")
        index[record["source_id"]] = record
    return index


def validate_case(case: object, where: str, sources: dict[str, dict] | None = None,
                  verticals: Sequence[str] = DEFAULT_VERTICALS) -> dict:
    """Validate one case row: field types and vocabularies, then its consistency with its text and sources.

    Args:
        case: the parsed JSON value of one line.
        where: file and line, for the error message.
        sources: source_id -> record for a case that names a `corpus` (its inline `sources` are used otherwise;
            None with a `corpus` skips the evidence-to-source checks).
        verticals: the allowed verticals.

    Returns:
        The case, unchanged.

    Raises:
        CaseError: naming `where`, the field path and expected vs got.
    """
    _check_fields(case, _CASE_FIELDS, "", where)
    text = case["text"]
    _check_choice(case["lang"], LANGUAGES, "lang", where)
    if "vertical" in case:
        _check_choice(case["vertical"], verticals, "vertical", where)
    if "error_type" in case:
        _check_choice(case["error_type"], ERROR_TYPES, "error_type", where)
    if "split" in case:
        _check_choice(case["split"], SPLITS, "split", where)
    if ("corpus" in case) == ("sources" in case):
        raise CaseError(where, "corpus", "expected exactly one of `corpus` (a file) or `sources` (inline), got "
                                         + ("both" if "corpus" in case else "neither"))
    if "sources" in case:
        for position, record in enumerate(case["sources"]):
            validate_source(record, where, f"sources[{position}]")
        sources = index_sources(case["sources"], where)
    _check_paragraphs(case.get("paragraphs", []), len(text), where)
    segmented = {text[start:end].strip() for start, end in sentence_spans(text)} if case.get("sentences") else set()
    for position, sentence in enumerate(case.get("sentences", [])):
        field = f"sentences[{position}]"
        _check_fields(sentence, _SENTENCE_FIELDS, field, where)
        if sentence["text"] not in text:
            raise CaseError(where, f"{field}.text", f"expected a verbatim substring of `text`, got "
                                                    f"{_show(sentence['text'])}")
        if sentence["text"].strip() not in segmented:
            raise CaseError(where, f"{field}.text", "expected one whole sentence as the pipeline splits `text` "
                                                    "(factlab.matching.segment: it ends a sentence at . ! ? ; and at "
                                                    f"。！？；), got {_show(sentence['text'])}")
    claim_ids: set[str] = set()
    for position, claim in enumerate(case.get("claims", [])):
        _check_claim(claim, f"claims[{position}]", case, sources, verticals, where)
        if claim["claim_id"] in claim_ids:
            raise CaseError(where, f"claims[{position}].claim_id",
                            f"expected unique claim ids in a case, got {claim['claim_id']!r} twice")
        claim_ids.add(claim["claim_id"])
    _check_claim_sentences(case, where)
    for position, item in enumerate(case.get("review", [])):
        field = f"review[{position}]"
        _check_fields(item, _REVIEW_FIELDS, field, where)
        _check_choice(item["action"], REVIEW_ACTIONS, f"{field}.action", where)
        if "flaw" in item:
            _check_choice(item["flaw"], REVIEW_FLAWS, f"{field}.flaw", where)
        if (item["action"] == "fix") != ("fixed" in item):
            presence = "with" if "fixed" in item else "without"
            raise CaseError(where, f"{field}.fixed", "expected `fixed` exactly when action is 'fix', got action "
                                                     f"{item['action']!r} {presence} it")
    return case


def _check_claim_sentences(case: dict, where: str) -> None:
    """The extraction gold's own consistency, for claims that name their `sentence`: the claim's `paragraph` is the
    one holding that sentence; a check-worthy claim does not come from a sentence the gold marks not check-worthy;
    and when the claims name their sentences, every check-worthy gold sentence yields at least one claim."""
    text, spans = case["text"], case.get("paragraphs", [])
    flags = {sentence["text"]: sentence["checkworthy"] for sentence in case.get("sentences", [])}
    for position, claim in enumerate(case.get("claims", [])):
        sentence = claim.get("sentence")
        if sentence is None:
            continue
        if "paragraph" in claim and spans:
            holding = [index for index, (start, end) in enumerate(spans) if sentence in text[start:end]]
            if holding and claim["paragraph"] not in holding:
                raise CaseError(where, f"claims[{position}].paragraph",
                                f"expected {holding[0]} (the paragraph holding its `sentence`), "
                                f"got {claim['paragraph']}")
        if claim.get("checkworthy", True) and flags.get(sentence) is False:
            raise CaseError(where, f"claims[{position}].sentence",
                            f"expected a check-worthy sentence, got one the gold `sentences` mark not check-worthy: "
                            f"{_show(sentence)} (or set the claim's checkworthy to false)")
    named = {claim["sentence"] for claim in case.get("claims", []) if "sentence" in claim}
    if not named:
        return
    for position, sentence in enumerate(case.get("sentences", [])):
        if sentence["checkworthy"] and sentence["text"] not in named:
            raise CaseError(where, f"sentences[{position}]",
                            f"expected at least one claim from this check-worthy sentence (a claim whose `sentence` "
                            f"is it), got none: {_show(sentence['text'])}")


def _check_paragraphs(paragraphs: list, length: int, where: str) -> None:
    previous_end = 0
    for position, span in enumerate(paragraphs):
        field = f"paragraphs[{position}]"
        if not (isinstance(span, list) and len(span) == 2 and all(type(x) is int for x in span)):
            raise CaseError(where, field, f"expected [start, end] integers, got {_show(span)}")
        start, end = span
        if not 0 <= start < end <= length:
            raise CaseError(where, field, f"expected 0 <= start < end <= len(text) = {length}, got {span}")
        if start < previous_end:
            raise CaseError(where, field, f"expected ascending, non-overlapping spans (start >= {previous_end}), "
                                          f"got {span}")
        previous_end = end


def _check_claim(claim: object, field: str, case: dict, sources: dict[str, dict] | None,
                 verticals: Sequence[str], where: str) -> None:
    _check_fields(claim, _CLAIM_FIELDS, field, where)
    if "sentence" in claim and claim["sentence"] not in case["text"]:
        raise CaseError(where, f"{field}.sentence", f"expected a verbatim substring of `text`, got "
                                                     f"{_show(claim['sentence'])}")
    if "paragraph" in claim and not 0 <= claim["paragraph"] < len(case.get("paragraphs", [])):
        raise CaseError(where, f"{field}.paragraph", f"expected an index into `paragraphs` "
                                                      f"(0..{len(case.get('paragraphs', [])) - 1}), got "
                                                      f"{claim['paragraph']}")
    if "vertical" in claim:
        _check_choice(claim["vertical"], verticals, f"{field}.vertical", where)
    if "error_type" in claim:
        _check_choice(claim["error_type"], ERROR_TYPES, f"{field}.error_type", where)
    if "relation" in claim:
        _check_relation(claim["relation"], f"{field}.relation", where)
    if "label" in claim:
        _check_choice(claim["label"], LABELS, f"{field}.label", where, hint=f" ({LABEL_HELP})")
    _check_strings(claim.get("queries", []), f"{field}.queries", where)
    for position, item in enumerate(claim.get("evidence", [])):
        _check_evidence(item, f"{field}.evidence[{position}]", sources, where)


def _check_evidence(item: object, field: str, sources: dict[str, dict] | None, where: str) -> None:
    _check_fields(item, _EVIDENCE_FIELDS, field, where)
    _check_relation(item["relation"], f"{field}.relation", where)
    if "tier" in item and item["tier"] not in (1, 2, 3):
        raise CaseError(where, f"{field}.tier", f"expected 1, 2 or 3, got {_show(item['tier'])}")
    match = CHUNK_ID_RE.fullmatch(item["chunk_id"])
    if not match or match["source"] != item["source_id"]:
        raise CaseError(where, f"{field}.chunk_id", f"expected {item['source_id']}#p<page>-c<n>, got "
                                                     f"{_show(item['chunk_id'])}")
    if sources is None:
        return
    if item["source_id"] not in sources:
        known = ", ".join(list(sources)[:8]) + (", ..." if len(sources) > 8 else "")
        raise CaseError(where, f"{field}.source_id", f"expected an existing source ({known or 'none'}), got "
                                                      f"{item['source_id']!r}")
    pages = source_pages(sources[item["source_id"]])
    page = int(match["page"])
    if page > len(pages):
        raise CaseError(where, f"{field}.chunk_id", f"expected page 1..{len(pages)} of {item['source_id']}, "
                                                     f"got {item['chunk_id']!r}")
    if item["text"] not in pages[page - 1]:
        raise CaseError(where, f"{field}.text", f"expected a verbatim substring of page {page} of source "
                                                 f"{item['source_id']}, got {_show(item['text'])}")


def load_corpus(path: Path | str) -> list[dict]:
    """Load and validate a corpus file (one source record per line).

    Raises:
        CaseError: a malformed record, a duplicate source_id, or an empty file.
    """
    records, seen = [], {}
    for where, record in read_rows(path, "jsonl"):
        validate_source(record, where)
        if record["source_id"] in seen:
            raise CaseError(where, "source_id", f"expected unique source ids, got {record['source_id']!r} again "
                                                f"(first at {seen[record['source_id']]})")
        seen[record["source_id"]] = where
        records.append(record)
    if not records:
        raise CaseError(str(path), "(file)", "expected at least one source record, got an empty file")
    return records


def load_cases(paths: Path | str | Iterable[Path | str], max_rows: int | None = None,
               verticals: Sequence[str] = DEFAULT_VERTICALS) -> list[dict]:
    """Load and validate case files; every case comes back with `sources` resolved (see the module docstring).

    Args:
        paths: one case file or several; case ids must be unique across all of them.
        max_rows: read at most this many cases per file (None: all).
        verticals: the allowed verticals.

    Returns:
        The cases as plain dicts, in file order.

    Raises:
        CaseError: a malformed row (file, line, field), a missing corpus, an empty file or an empty result.
    """
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    if not paths:
        raise CaseError("(no files)", "(files)", "expected at least one case file, got none")
    corpora: dict[Path, tuple[list[dict], dict[str, dict]]] = {}  # loaded once per corpus file
    seen: dict[str, str] = {}
    cases: list[dict] = []
    for path in map(Path, paths):
        before = len(cases)
        for where, case in read_rows(path, "jsonl", max_rows):
            corpus = None
            if isinstance(case, dict) and isinstance(case.get("corpus"), str) and "sources" not in case:
                corpus = _corpus(path, case["corpus"], where, corpora)
            validate_case(case, where, sources=corpus[1] if corpus else None, verticals=verticals)
            if case["case_id"] in seen:
                raise CaseError(where, "case_id", f"expected unique case ids, got {case['case_id']!r} again "
                                                  f"(first at {seen[case['case_id']]})")
            seen[case["case_id"]] = where
            if corpus:
                case["sources"] = corpus[0]
            cases.append(case)
        if len(cases) == before and max_rows != 0:
            raise CaseError(str(path), "(file)", "expected at least one case, got an empty file")
    if not cases:
        raise CaseError(", ".join(map(str, paths)), "(file)", f"expected at least one case, got none "
                                                              f"(max_rows={max_rows})")
    return cases


def _corpus(case_file: Path, name: str, where: str,
            corpora: dict[Path, tuple[list[dict], dict[str, dict]]]) -> tuple[list[dict], dict[str, dict]]:
    path = (case_file.parent / name).resolve()
    if path not in corpora:
        if not path.is_file():
            raise CaseError(where, "corpus", f"expected a corpus file relative to {case_file.parent}, got {name!r} "
                                             f"(looked for {path})")
        records = load_corpus(path)
        corpora[path] = (records, {record["source_id"]: record for record in records})
    return corpora[path]


def canonical_json(value: object) -> str:
    """The canonical JSON text used for hashing and writing: sorted keys, no ASCII escaping, compact.

    >>> canonical_json({"b": 1, "a": "中"})
    '{"a":"中","b":1}'
    """
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def case_row(case: dict) -> dict:
    """The case as it is written to a case file: `sources` dropped when they come from its `corpus` file."""
    return {key: value for key, value in case.items() if not (key == "sources" and "corpus" in case)}


def write_cases(path: Path | str, cases: Iterable[dict]) -> int:
    """Write cases as JSONL (see `case_row`); returns the number written."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(canonical_json(case_row(case)) + "\n")
            count += 1
    return count
