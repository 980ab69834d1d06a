"""What an imported library holds: items identified by `library_id + item_key + version`, their read-only metadata,
the user's own notes and the attachments (paths only; reading one needs a grant, factlab.knowledge.attachments).

Every record here is frozen: the knowledge layer reads the external record and never edits it. What factlab writes
goes to its own store (factlab.knowledge.store), keyed by the item's identity.

>>> ref = ItemRef("zotero:1", "ABCD2345", 7)
>>> str(ref), ref.key
('zotero:1/ABCD2345@7', ('zotero:1', 'ABCD2345'))
>>> Creator("Fleming", "Alexander").name, Creator("World Health Organization").name, Creator("张", "三").name
('Alexander Fleming', 'World Health Organization', '张三')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from factlab.textio import InputError

_CJK = re.compile(r"[\u4e00-\u9fff]")


class KnowledgeError(InputError):
    """A library file or a knowledge-layer call is wrong; the message names the file, line or item and the fix."""


@dataclass(frozen=True, order=True)
class ItemRef:
    """The identity of one version of one item: the library it lives in, its key there, and its version.

    Title, authors, year, DOI and venue are NOT identity: two items may share a DOI (a preprint and its journal
    version), and a record's metadata can change while its key stays.
    """

    library_id: str
    item_key: str
    version: int | str

    @property
    def key(self) -> tuple[str, str]:
        """(library_id, item_key): the item across its versions (what notes and tags hang on)."""
        return self.library_id, self.item_key

    def __str__(self) -> str:
        return f"{self.library_id}/{self.item_key}@{self.version}"


@dataclass(frozen=True)
class Creator:
    """One creator as the record gives it: `family` and `given` names, or an institution's name alone in `family`."""

    family: str
    given: str = ""
    role: str = "author"

    @property
    def name(self) -> str:
        """The name as written in running text: given then family, a Chinese name family first without a space (as
        the checker's citation model reads "张三等（2020）", factlab.matching.citations)."""
        if _CJK.search(self.family + self.given):
            return f"{self.family}{self.given}"
        return f"{self.given} {self.family}".strip()


@dataclass(frozen=True)
class Attachment:
    """A file that belongs to an item. `path` is None when the record names a file that cannot be located (a linked
    URL, a base-relative path without a base folder); `key` is the attachment's own key where the library has one."""

    path: Path | None
    content_type: str = ""
    key: str = ""
    title: str = ""


@dataclass(frozen=True)
class UserNote:
    """A note the user wrote in their library: read, shown, exported, never modified."""

    key: str
    body: str
    title: str = ""


@dataclass(frozen=True)
class Item:
    """One bibliographic item with its read-only metadata.

    Attributes:
        ref: identity (library, key, version).
        item_type: the library's own type word (journalArticle, preprint, article-journal, misc...).
        title, creators, year, doi, venue, abstract, url, date: the record's metadata, unchanged ("" / None when
            absent). `venue` is the journal, proceedings, book or repository title.
        citation_key: a BibTeX key where the record has one (BibTeX imports, Better BibTeX `Citation Key:`).
        extra: further fields as (name, value) pairs, for duplicate hints (arXiv ids in `extra`, `eprint`).
        tags, collections: the user's own tags and collection paths (read, never changed).
        notes, attachments: the user's child notes and the item's files.
    """

    ref: ItemRef
    item_type: str
    title: str
    creators: tuple[Creator, ...] = ()
    year: int | None = None
    doi: str = ""
    venue: str = ""
    abstract: str = ""
    url: str = ""
    date: str = ""
    citation_key: str = ""
    extra: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    notes: tuple[UserNote, ...] = ()
    attachments: tuple[Attachment, ...] = ()

    @property
    def authors(self) -> tuple[Creator, ...]:
        """The creators in the author role (all creators when none is marked author)."""
        authors = tuple(c for c in self.creators if c.role == "author")
        return authors or self.creators

    def field(self, name: str) -> str:
        """The first value of an extra field, "" when absent."""
        return next((value for key, value in self.extra if key == name), "")


@dataclass(frozen=True)
class Library:
    """The items read from one library file or folder, and the problems met while reading it.

    Attributes:
        name: what the library was read from, for messages (``zotero.sqlite``, ``refs.bib``).
        origin: the file or folder read; the note store refuses to live there.
        items: the items, in the order of the source.
        problems: one line per record that could not be read (file, line, field, fix); the others still import.
    """

    name: str
    origin: Path
    items: tuple[Item, ...]
    problems: tuple[str, ...] = ()
    _by_key: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for item in self.items:
            self._by_key.setdefault(item.ref.key, item)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def get(self, library_id: str, item_key: str) -> Item:
        """The item with this key, or a KnowledgeError naming the library."""
        try:
            return self._by_key[(library_id, item_key)]
        except KeyError:
            raise KnowledgeError(f"{self.name}: no item {library_id}/{item_key}; the library has {len(self)} items "
                                 "(was it re-imported from another file?)") from None

    def with_key(self, item_key: str) -> list[Item]:
        """Every item whose key or citation key is `item_key` (one per library, usually one in all)."""
        return [item for item in self.items if item_key in (item.ref.item_key, item.citation_key)]


def unique_items(items: Iterable[Item], where: str) -> tuple[tuple[Item, ...], list[str]]:
    """Items with their first occurrence kept per (library_id, item_key); a problem line for each later copy."""
    seen: set[tuple[str, str]] = set()
    kept, problems = [], []
    for item in items:
        if item.ref.key in seen:
            problems.append(f"{where}: duplicate item key {item.ref.item_key!r}; the later copy is skipped, rename "
                            "one of them")
            continue
        seen.add(item.ref.key)
        kept.append(item)
    return tuple(kept), problems
