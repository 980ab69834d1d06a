"""The records retrieval produces: sources, chunks and the issues met while ingesting.

>>> Chunk.make_id("who-2023-report", page=2, n=3)
'who-2023-report#p2-c3'
>>> str(IngestIssue("papers/x.pdf", "not a PDF (EOF marker not found)"))
'papers/x.pdf: not a PDF (EOF marker not found)'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass
class Source:
    """One ingested document with its metadata; `path` is relative to the ingested folder (posix)."""

    source_id: str
    path: str
    title: str
    tier: int
    author: str = ""
    year: int | None = None
    url: str = ""
    domain: str = ""
    doi: str = ""
    vertical: str = ""
    lang: str = ""
    pages: int = 1
    line: int | None = None  # line of the record inside a .jsonl file; None for one-document files

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict) -> Source:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in row.items() if key in names})


@dataclass
class Chunk:
    """A span of one page of a source: `text == page_text[start:end]`."""

    chunk_id: str
    source_id: str
    page: int
    n: int
    start: int
    end: int
    text: str

    @staticmethod
    def make_id(source_id: str, page: int, n: int) -> str:
        """The stable chunk id `<source_id>#p<page>-c<n>` (pages and chunks counted from 1)."""
        return f"{source_id}#p{page}-c{n}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict) -> Chunk:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in row.items() if key in names})


@dataclass
class IngestIssue:
    """A file (or one line of a .jsonl file) that could not be ingested, and why."""

    path: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.reason}"

    def to_dict(self) -> dict:
        return asdict(self)
