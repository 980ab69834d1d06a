"""The logic layer's gold (datasets/layers/logic_gold.jsonl, procedure in datasets/README.md): short documents in
English and Chinese, each paragraph with the logic finding a careful reader would raise, or none.

One JSON object per line: `doc_id`, `lang` (en | zh), `group` (documents written as variants of one another share a
group and always share a split), `paragraphs` (list of strings), `findings` (list of {`paragraph`: 1-based index,
`kind`: one of factlab.rules.logic.LOGIC_KINDS, `keyword`: a verbatim span of that paragraph}; at most one per
paragraph). As a dataset (`dataset=logic_gold`, optimize.py stage=logic) each document is a case with its
`paragraph_texts` and `logic` findings, split by group.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.jsonl import read_jsonl
from factlab.data.loaders.build import resolve_files
from factlab.data.splits import assign_splits
from factlab.schema import LANGUAGES, LOGIC_KINDS

_DOC_FIELDS = {"doc_id": str, "lang": str, "group": str, "paragraphs": list, "findings": list}
_FINDING_FIELDS = {"paragraph": int, "kind": str, "keyword": str}


def _fields(obj: object, spec: Mapping[str, type], path: str, where: str) -> dict:
    if not isinstance(obj, dict):
        raise CaseError(where, path or "(line)", f"expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(spec))
    if unknown:
        raise CaseError(where, f"{path}{unknown[0]}", f"unknown field; expected one of {sorted(spec)}")
    for key, kind in spec.items():
        if key not in obj:
            raise CaseError(where, f"{path}{key}", "missing required field")
        if not isinstance(obj[key], kind) or isinstance(obj[key], bool):
            raise CaseError(where, f"{path}{key}", f"expected {kind.__name__}, got {type(obj[key]).__name__}")
    return obj


def validate_logic_doc(doc: object, where: str) -> dict:
    """One gold line checked: fields and types, vocabularies, every keyword a verbatim span of its paragraph.

    Raises:
        CaseError: naming `where` (file:line) and the field.
    """
    _fields(doc, _DOC_FIELDS, "", where)
    if doc["lang"] not in LANGUAGES:
        raise CaseError(where, "lang", f"expected one of {list(LANGUAGES)}, got {doc['lang']!r}")
    if not doc["paragraphs"] or not all(isinstance(p, str) and p.strip() for p in doc["paragraphs"]):
        raise CaseError(where, "paragraphs", "expected a non-empty list of non-empty strings")
    seen = set()
    for position, finding in enumerate(doc["findings"]):
        field = f"findings[{position}]."
        _fields(finding, _FINDING_FIELDS, field, where)
        if finding["kind"] not in LOGIC_KINDS:
            raise CaseError(where, field + "kind", f"expected one of {list(LOGIC_KINDS)}, got {finding['kind']!r}")
        if not 1 <= finding["paragraph"] <= len(doc["paragraphs"]):
            raise CaseError(where, field + "paragraph",
                            f"expected 1..{len(doc['paragraphs'])}, got {finding['paragraph']}")
        if finding["paragraph"] in seen:
            raise CaseError(where, field + "paragraph", "expected at most one finding per paragraph")
        seen.add(finding["paragraph"])
        if finding["keyword"] not in doc["paragraphs"][finding["paragraph"] - 1]:
            raise CaseError(where, field + "keyword", f"expected a verbatim span of paragraph {finding['paragraph']}"
                                                      f", got {finding['keyword']!r}")
    return doc


def read_logic_gold(path: Path | str) -> list[dict]:
    """Every document of a logic gold file, validated (a bad line raises CaseError naming file, line and field)."""
    return read_jsonl(path, validate_logic_doc, "doc_id")


def load(*, name: str, data_root: str, files: list[str], fractions: Mapping[str, float], seed: int,
         test_files: list[str] = (), max_rows: int | None = None) -> list[dict]:
    """The gold as cases (`case_id`, `lang`, `text`, `paragraph_texts`, `logic`, `split`): the documents of `files`
    split by group with `fractions`, every document of `test_files` (a held-out set) in test."""
    docs = [doc for path in resolve_files(name, data_root, files) for doc in read_logic_gold(path)[:max_rows]]
    held = [doc for path in (resolve_files(name, data_root, test_files) if test_files else [])
            for doc in read_logic_gold(path)[:max_rows]]
    groups = {}
    for doc in docs:
        groups.setdefault(doc["group"], {"case_id": doc["group"], "lang": doc["lang"], "text": doc["group"]})
    assignment = assign_splits(list(groups.values()), dict(fractions), seed)
    clash = sorted({d["group"] for d in held} & set(groups) | {d["doc_id"] for d in held} & {d["doc_id"] for d in docs})
    if clash:
        raise ValueError(f"conf/dataset/{name}.yaml: test_files share groups / doc ids with files: {clash[:5]}")
    return [{"case_id": doc["doc_id"], "lang": doc["lang"], "text": "\n\n".join(doc["paragraphs"]),
             "paragraph_texts": list(doc["paragraphs"]), "logic": list(doc["findings"]),
             "split": "test" if split is None else split}
            for doc, split in [*((d, assignment[d["group"]]) for d in docs), *((d, None) for d in held)]]
