"""What every public-dataset loader shares: finding its files, mapping its labels, building schema cases.

A loader turns one upstream row into one case: `text` is the claim, with one claim carrying the mapped gold
relation and label, evidence items pointing into inline `sources`, so every stage view works on every dataset.
Sources are packed into pages of at most PAGE_CHARS characters (whole sentences, never split), so each page is a
single retrieval chunk and an evidence item's chunk id is ``<source_id>#p<page>-c1``.
"""

from __future__ import annotations

import glob
import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from factlab.config import CONF_DIR
from factlab.data.cases import validate_case
from factlab.data.errors import CaseError, DatasetConfigError
from factlab.data.rows import FORMATS, read_rows
from factlab.schema import LABELS, RELATIONS

REPO_ROOT = CONF_DIR.parent
PAGE_CHARS = 800  # the bundled corpus rule: a page of at most 800 characters is one chunk


def config_file(name: str) -> str:
    """The yaml file that configures dataset `name` (named in error messages: the file to edit).

    >>> config_file("healthver")
    'conf/dataset/healthver.yaml'
    """
    return f"conf/dataset/{name}.yaml"


def resolve_path(path: str | Path) -> Path:
    """Resolve a config path: absolute as given, relative against the repo root (never the working directory)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else (REPO_ROOT / path).resolve()


def resolve_files(name: str, data_root: str, files: Sequence[str]) -> list[Path]:
    """Resolve `files` (paths or glob patterns) under `data_root`.

    Raises:
        DatasetConfigError: naming the path searched and the config key that set it.
    """
    root = resolve_path(data_root)
    where = f"{config_file(name)}: dataset.data_root = {data_root!r} (FACTLAB_DATA_ROOT or its default)"
    if not root.is_dir():
        raise DatasetConfigError(f"{where}: folder {root} not found; set FACTLAB_DATA_ROOT to the folder holding the "
                                 "public datasets (see ../shared/data/README.md) or override dataset.data_root")
    if not files:
        raise DatasetConfigError(f"{config_file(name)}: dataset.files: expected at least one file, got none")
    paths: list[Path] = []
    for position, pattern in enumerate(files):
        found = sorted(Path(p) for p in glob.glob(str(root / pattern))) if glob.has_magic(pattern) else [root / pattern]
        found = [p for p in found if p.is_file()]
        if not found:
            raise DatasetConfigError(f"{config_file(name)}: dataset.files[{position}] = {pattern!r}: no file at "
                                     f"{root / pattern} (searched under dataset.data_root = {root})")
        paths.extend(found)
    return paths


def slug(text: str, limit: int = 40) -> str:
    """Lower-case ASCII slug for ids: letters and digits, everything else a single '-'.

    >>> slug("Global warming: 14")
    'global-warming-14'
    >>> slug("芝加哥")
    ''
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower().encode("ascii", "ignore").decode())[:limit].strip("-")


@dataclass(frozen=True)
class UpstreamRow:
    """One row of an upstream file, with its location and the prefix for the case ids built from it."""

    where: str
    id_prefix: str
    number: int
    row: object


def iter_rows(name: str, data_root: str, files: Sequence[str], format: str,
              max_rows: int | None, columns: Sequence[str] | None = None) -> Iterator[UpstreamRow]:
    """Rows of every file of a dataset; with several files the case id prefix carries the file name."""
    if format not in FORMATS:
        raise DatasetConfigError(f"{config_file(name)}: dataset.format: expected one of {', '.join(FORMATS)}, "
                                 f"got {format!r}")
    paths = resolve_files(name, data_root, files)
    for path in paths:
        prefix = f"{name}-{slug(path.name.rsplit('.', 1)[0], 60)}" if len(paths) > 1 else name
        for number, (where, row) in enumerate(read_rows(path, format, max_rows, columns), start=1):
            yield UpstreamRow(where, prefix, number, row)


def get_field(row: object, key: str, where: str, name: str, setting: str) -> object:
    """`row[key]`, or a CaseError naming the row and the config setting that asked for it."""
    if not isinstance(row, Mapping):
        raise CaseError(where, "(row)", f"expected an object, got {type(row).__name__}")
    if key not in row:
        raise CaseError(where, key, f"missing field (asked for by {setting} in {config_file(name)}); the row has "
                                    f"{', '.join(map(str, row))}")
    return row[key]


def get_text(row: object, key: str, where: str, name: str, setting: str) -> str:
    """A non-empty string field of a row, stripped."""
    value = get_field(row, key, where, name, setting)
    if not isinstance(value, str) or not value.strip():
        raise CaseError(where, key, f"expected a non-empty string, got {value!r}")
    return value.strip()


class LabelMap:
    """Upstream label -> (relation, label), as the `labels` table of a dataset config says; checked up front.

    >>> labels = LabelMap("x", {"SUPPORTS": {"relation": "support", "label": "correct"}}, skip=["-"])
    >>> labels("SUPPORTS", "f line 1", "label"), labels("-", "f line 2", "label")
    (('support', 'correct'), None)
    """

    def __init__(self, name: str, labels: Mapping[str, Mapping[str, str]], skip: Sequence[str] = (),
                 key: str = "labels") -> None:
        self.name, self.key, self.skip = name, key, {str(s) for s in skip}
        self.table: dict[str, tuple[str, str]] = {}
        for raw, target in labels.items():
            relation, label = target.get("relation"), target.get("label")
            if relation not in RELATIONS or label not in LABELS:
                raise DatasetConfigError(
                    f"{config_file(name)}: {key}.{raw}: expected {{relation: one of {', '.join(RELATIONS)}, "
                    f"label: one of {', '.join(LABELS)}}}, got {dict(target)}")
            self.table[str(raw)] = (relation, label)

    def __call__(self, raw: object, where: str, field: str) -> tuple[str, str] | None:
        """The mapped (relation, label), None for a label listed in `skip_labels`."""
        if str(raw) in self.skip:
            return None
        if str(raw) not in self.table:
            raise CaseError(where, field, f"unmapped label {raw!r}; mapped: {', '.join(self.table)}; add it to "
                                          f"`{self.key}` (or `skip_labels`) in {config_file(self.name)}")
        return self.table[str(raw)]


def relation_map(name: str, table: Mapping[str, str], key: str = "evidence_labels") -> dict[str, str]:
    """Check an upstream evidence label -> relation table of a dataset config."""
    for raw, relation in table.items():
        if relation not in RELATIONS:
            raise DatasetConfigError(f"{config_file(name)}: {key}.{raw}: expected one of {', '.join(RELATIONS)}, "
                                     f"got {relation!r}")
    return {str(raw): relation for raw, relation in table.items()}


@dataclass(frozen=True)
class Snippet:
    """A sentence of a source as upstream gives it.

    Attributes:
        text: the sentence.
        title: the source's title; snippets with the same title and url form one source.
        url: the source's address, when known.
        relation: this snippet's own gold relation; None inherits the claim's.
        evidence: False for context sentences of a source that are not gold evidence.
    """

    text: str
    title: str
    url: str | None = None
    relation: str | None = None
    evidence: bool = True


def _pack_pages(sentences: Sequence[str], separator: str) -> tuple[list[str], list[int]]:
    """Pack sentences into pages of at most PAGE_CHARS; also return the 1-based page of each sentence.

    >>> _pack_pages(["a" * 500, "b" * 200, "c" * 200], " ")[1]
    [1, 1, 2]
    """
    pages: list[list[str]] = []
    page_of: list[int] = []
    size = 0
    for sentence in sentences:
        if not pages or size + len(separator) + len(sentence) > PAGE_CHARS:
            pages.append([])
            size = -len(separator)
        pages[-1].append(sentence)
        size += len(separator) + len(sentence)
        page_of.append(len(pages))
    return [separator.join(page) for page in pages], page_of


def build_case(*, case_id: str, lang: str, claim: str, relation: str, label: str, snippets: Sequence[Snippet],
               vertical: str | None = None, claim_extra: Mapping[str, object] | None = None) -> dict:
    """One schema case for one upstream claim: text = the claim, one claim with gold, sources from the snippets.

    >>> case = build_case(case_id="x-1", lang="en", claim="Water boils at 100 C.", relation="support",
    ...                   label="correct", snippets=[Snippet("Water boils at 100 C at sea level.", "Water")])
    >>> case["claims"][0]["evidence"][0]["chunk_id"], case["sources"][0]["source_id"]
    ('water-586f8fba#p1-c1', 'water-586f8fba')
    """
    groups: dict[tuple[str, str | None], list[Snippet]] = {}
    for snippet in snippets:
        if snippet.text.strip():
            groups.setdefault((snippet.title, snippet.url), []).append(snippet)
    sources, evidence, seen = [], [], set()
    for (title, url), members in groups.items():
        source_id = "-".join(filter(None, [slug(title or url or ""), hashlib.sha1(
            f"{title}\n{url}".encode()).hexdigest()[:8]]))
        texts = [member.text.strip() for member in members]
        pages, page_of = _pack_pages(texts, "" if lang == "zh" else " ")
        record = {"source_id": source_id, "title": title or url or "evidence", "lang": lang}
        record.update({"text": pages[0]} if len(pages) == 1 else {"pages": pages})
        if url:
            record["url"] = url
        sources.append(record)
        for member, text, page in zip(members, texts, page_of, strict=True):
            if member.evidence and (source_id, text) not in seen:
                seen.add((source_id, text))
                evidence.append({"source_id": source_id, "chunk_id": f"{source_id}#p{page}-c1", "text": text,
                                 "relation": member.relation or relation})
    gold = {"claim_id": "c1", "text": claim, "relation": relation, "label": label}
    if evidence:
        gold["evidence"] = evidence
    if vertical:
        gold["vertical"] = vertical
    gold.update(claim_extra or {})
    case = {"case_id": case_id, "lang": lang, "text": claim}
    if vertical:
        case["vertical"] = vertical
    case.update({"claims": [gold], "sources": sources})
    return case


class CaseCollector:
    """Validate built cases and refuse a repeated case id, naming both upstream rows; refuse an empty result."""

    def __init__(self, name: str) -> None:
        self.name, self.cases, self._seen = name, [], {}

    def add(self, case: dict, where: str) -> None:
        validate_case(case, where)
        if case["case_id"] in self._seen:
            raise CaseError(where, "case_id", f"expected unique ids, got {case['case_id']!r} again (first at "
                                              f"{self._seen[case['case_id']]}); map another id field in "
                                              f"{config_file(self.name)}")
        self._seen[case["case_id"]] = where
        self.cases.append(case)

    def result(self) -> list[dict]:
        if not self.cases:
            raise DatasetConfigError(f"{config_file(self.name)}: expected at least one case, got none (every row "
                                     "skipped, or max_rows = 0)")
        return self.cases
