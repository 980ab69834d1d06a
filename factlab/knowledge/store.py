"""factlab's own store of what it writes about library items: one child note per (item, task), and system tags.

The store is a SQLite file of factlab's, never the user's library: it refuses a path that is the imported library
itself, lies inside an imported folder, or holds another program's tables (a Zotero database). Writing is an
idempotent upsert: the same task key and version give back the note already there; a new version is stacked over
the old one, which stays and comes back with `undo`. Only tags of the `factlab/` namespace are written; the user's
tags, collections, inbox and notes are never touched (they are not even in this file).

Every note here is written by factlab (`Note.written_by`), so none is evidence by itself: a note becomes a source
(factlab.knowledge.sources) only once a person has accepted that very version (`NoteStore.accept`, the CLI's
`accept`), which stops factlab's own findings from coming back to it as evidence for the next run.

>>> check_tag("factlab/verified")
'factlab/verified'
>>> check_tag("to-read")
Traceback (most recent call last):
...
factlab.knowledge.items.KnowledgeError: only factlab/* tags are written, got 'to-read'; write 'factlab/to-read'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, NamedTuple
from urllib.parse import quote

from factlab.knowledge.items import Item, ItemRef, KnowledgeError, Library

TAG_PREFIX = "factlab/"
STORE_KIND = "factlab-knowledge-store"
SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    note_id INTEGER PRIMARY KEY,
    library_id TEXT NOT NULL, item_key TEXT NOT NULL, task_key TEXT NOT NULL, version TEXT NOT NULL,
    item_version TEXT NOT NULL, body TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL,
    UNIQUE (library_id, item_key, task_key, version));
-- per (item, task) a stack of the notes made current, oldest first: the top is the current note, undo pops it
CREATE TABLE IF NOT EXISTS note_history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, library_id TEXT NOT NULL, item_key TEXT NOT NULL, task_key TEXT NOT NULL,
    note_id INTEGER NOT NULL REFERENCES notes (note_id));
CREATE TABLE IF NOT EXISTS tags (
    library_id TEXT NOT NULL, item_key TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (library_id, item_key, tag));
-- a person's acceptance of one note version (a later version is not accepted by it)
CREATE TABLE IF NOT EXISTS acceptances (
    note_id INTEGER PRIMARY KEY REFERENCES notes (note_id), accepted_by TEXT NOT NULL, accepted_at TEXT NOT NULL);
"""
_OWN_TABLES = {"store_meta", "notes", "note_history", "tags", "acceptances", "sqlite_sequence"}
WRITTEN_BY = "factlab"  # the author of every note in the store


def check_tag(tag: str) -> str:
    """The tag, when it lies in the system namespace `factlab/`; else KnowledgeError with the fix."""
    if not isinstance(tag, str) or not tag.startswith(TAG_PREFIX) or not tag[len(TAG_PREFIX):].strip():
        raise KnowledgeError(f"only {TAG_PREFIX}* tags are written, got {tag!r}; write "
                             f"{TAG_PREFIX + str(tag).removeprefix(TAG_PREFIX).strip()!r}")
    return tag


def check_person(person: str) -> str:
    """The name of the person accepting a note; factlab cannot accept its own notes.

    >>> check_person(" Ann Lee ")
    'Ann Lee'
    >>> check_person("factlab")
    Traceback (most recent call last):
    ...
    factlab.knowledge.items.KnowledgeError: a note is accepted by a person, got 'factlab'; pass your own name (--by)
    """
    name = person.strip() if isinstance(person, str) else ""
    if not name or name.lower() == WRITTEN_BY:
        raise KnowledgeError(f"a note is accepted by a person, got {person!r}; pass your own name (--by)")
    return name


def body_version(item_version: int | str, body: str) -> str:
    """The default note version: a hash of the item version it was made on and the body, so an identical rerun
    is the same version and a changed result (or a changed source) is a new one.

    >>> body_version(3, "ok") == body_version("3", "ok") != body_version(4, "ok")
    True
    """
    return hashlib.sha1(f"{item_version}\n{body}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Note:
    """One version of factlab's child note on an item for a task.

    Attributes:
        item: the item version the note was made on.
        task_key: the task that wrote it (e.g. `verify/report-2026-12-01`).
        version: the note's version (caller's, or `body_version`).
        body: the note's text (Markdown).
        data: structured results behind the body (JSON-able).
        current: whether this is the version now in force.
        accepted_by, accepted_at: the person who accepted this version and when ("" while nobody has).
    """

    note_id: int
    item: ItemRef
    task_key: str
    version: str
    body: str
    data: dict = field(hash=False)
    created_at: str
    current: bool
    accepted_by: str = ""
    accepted_at: str = ""

    @property
    def written_by(self) -> str:
        """Who wrote the note: always factlab (the store holds nothing else)."""
        return WRITTEN_BY

    @property
    def accepted(self) -> bool:
        """A person accepted this version: only then may it serve as evidence (factlab.knowledge.sources)."""
        return bool(self.accepted_by)


class Upsert(NamedTuple):
    """What `upsert` did: `created` a new version, found it `unchanged` (already current), or `restored` an older
    existing version as current."""

    note: Note
    action: Literal["created", "unchanged", "restored"]


def _refuse_foreign(path: Path, libraries: tuple[Library, ...]) -> None:
    resolved = path.resolve()
    for library in libraries:
        origin = Path(library.origin).resolve()
        if resolved == origin or (origin.is_dir() and origin in resolved.parents):
            raise KnowledgeError(f"{path}: the note store must not live in the user's library {origin}; put it "
                                 "in factlab's own output folder")
    if not path.exists():
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{quote(str(resolved))}?mode=ro", uri=True)) as probe:
            tables = {r[0] for r in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            kind = (probe.execute("SELECT value FROM store_meta WHERE name = 'kind'").fetchone()
                    if "store_meta" in tables else None)
    except sqlite3.DatabaseError as exc:
        raise KnowledgeError(f"{path}: exists and is not a factlab note store ({exc}); choose a new file") from None
    if tables and (kind is None or kind[0] != STORE_KIND or tables - _OWN_TABLES):
        raise KnowledgeError(f"{path}: holds another program's tables ({', '.join(sorted(tables - _OWN_TABLES))[:80]}"
                             "); factlab never writes into a user's database, choose a new file for its notes")


class NoteStore:
    """factlab's notes and system tags, in the SQLite file at `path` (created when missing).

    Args:
        path: the store file, e.g. `outputs/knowledge/notes.sqlite`.
        libraries: the imported libraries; the store refuses to live in any of them.

    Use as a context manager, or call `close()`.
    """

    def __init__(self, path: str | Path, libraries: tuple[Library, ...] | list[Library] = ()) -> None:
        self.path = Path(path)
        _refuse_foreign(self.path, tuple(libraries))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self._db.executescript(_SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO store_meta VALUES ('kind', ?), ('schema', ?)",
                         (STORE_KIND, SCHEMA_VERSION))

    def __enter__(self) -> NoteStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    # notes -----------------------------------------------------------------------------------------------------

    def _note(self, row: tuple, current_id: int | None) -> Note:
        note_id, library_id, item_key, task_key, version, item_version, body, data, created_at = row
        accepted = self._db.execute("SELECT accepted_by, accepted_at FROM acceptances WHERE note_id = ?",
                                    (note_id,)).fetchone() or ("", "")
        return Note(note_id, ItemRef(library_id, item_key, _int_or_str(item_version)), task_key, version, body,
                    json.loads(data), created_at, note_id == current_id, *accepted)

    def _current_id(self, library_id: str, item_key: str, task_key: str) -> int | None:
        row = self._db.execute("SELECT note_id FROM note_history WHERE library_id = ? AND item_key = ? AND "
                               "task_key = ? ORDER BY seq DESC LIMIT 1", (library_id, item_key, task_key)).fetchone()
        return row[0] if row else None

    def _by_id(self, note_id: int) -> Note:
        row = self._db.execute("SELECT * FROM notes WHERE note_id = ?", (note_id,)).fetchone()
        return self._note(row, self._current_id(row[1], row[2], row[3]))

    def upsert(self, item: Item | ItemRef, task_key: str, body: str, version: str | None = None,
               data: dict | None = None) -> Upsert:
        """Write the task's note on the item, idempotently.

        Args:
            item: the item (or its ref) the note is about; its version is recorded with the note.
            task_key: the task writing it; one current note per (item, task).
            body: the note text.
            version: the note's version; default `body_version(item version, body)`.
            data: structured results (JSON-able) stored beside the body.

        Returns:
            The note now current, and whether it was `created`, `unchanged` or `restored`.
        """
        ref = item.ref if isinstance(item, Item) else item
        if not task_key or not task_key.strip():
            raise KnowledgeError(f"upsert on {ref}: task_key is empty; name the task (e.g. 'verify/<run>')")
        version = version or body_version(ref.version, body)
        library_id, item_key = ref.key
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._db.execute("SELECT note_id FROM notes WHERE library_id = ? AND item_key = ? AND task_key = ? "
                                   "AND version = ?", (library_id, item_key, task_key, version)).fetchone()
            if row is not None and row[0] == self._current_id(library_id, item_key, task_key):
                action = "unchanged"
            else:
                if row is None:
                    note_id = self._db.execute(
                        "INSERT INTO notes (library_id, item_key, task_key, version, item_version, body, data, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (library_id, item_key, task_key, version, str(ref.version), body,
                         json.dumps(data or {}, ensure_ascii=False, sort_keys=True),
                         datetime.now(UTC).isoformat(timespec="seconds"))).lastrowid
                    action = "created"
                else:
                    note_id, action = row[0], "restored"
                self._db.execute("INSERT INTO note_history (library_id, item_key, task_key, note_id) VALUES "
                                 "(?, ?, ?, ?)", (library_id, item_key, task_key, note_id))
                row = (note_id,)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return Upsert(self._by_id(row[0]), action)

    def current(self, item: Item | ItemRef, task_key: str) -> Note | None:
        """The note in force for (item, task), None when the task never wrote one."""
        ref = item.ref if isinstance(item, Item) else item
        note_id = self._current_id(*ref.key, task_key)
        return self._by_id(note_id) if note_id is not None else None

    def versions(self, item: Item | ItemRef, task_key: str) -> list[Note]:
        """Every version of the (item, task) note, oldest first (undone ones included)."""
        ref = item.ref if isinstance(item, Item) else item
        current = self._current_id(*ref.key, task_key)
        rows = self._db.execute("SELECT * FROM notes WHERE library_id = ? AND item_key = ? AND task_key = ? "
                                "ORDER BY note_id", (*ref.key, task_key)).fetchall()
        return [self._note(row, current) for row in rows]

    def undo(self, item: Item | ItemRef, task_key: str) -> Note:
        """Make the previous version of the (item, task) note current again; the undone version is kept.

        Raises:
            KnowledgeError: there is no earlier version to go back to.
        """
        ref = item.ref if isinstance(item, Item) else item
        library_id, item_key = ref.key
        self._db.execute("BEGIN IMMEDIATE")
        try:
            stack = self._db.execute("SELECT seq FROM note_history WHERE library_id = ? AND item_key = ? AND "
                                     "task_key = ? ORDER BY seq DESC LIMIT 2",
                                     (library_id, item_key, task_key)).fetchall()
            if len(stack) < 2:
                raise KnowledgeError(f"nothing to undo for task {task_key!r} on item {library_id}/{item_key}: "
                                     f"{'it has one version' if stack else 'it has no note'}")
            self._db.execute("DELETE FROM note_history WHERE seq = ?", (stack[0][0],))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return self.current(ref, task_key)

    def accept(self, item: Item | ItemRef, task_key: str, person: str, version: str | None = None) -> Note:
        """Record that `person` accepted the (item, task) note: the current version, or `version`. Only an accepted
        version may serve as evidence; a later version factlab writes is not accepted by it. Accepting an accepted
        version again keeps the first acceptance.

        Raises:
            KnowledgeError: the person is missing or is factlab, or there is no such note or version.
        """
        ref = item.ref if isinstance(item, Item) else item
        person = check_person(person)
        if version is None:
            note = self.current(ref, task_key)
        else:
            note = next((n for n in self.versions(ref, task_key) if n.version == version), None)
        if note is None:
            versions = ", ".join(n.version for n in self.versions(ref, task_key)) or "none"
            raise KnowledgeError(f"no note of task {task_key!r} on item {ref.library_id}/{ref.item_key}"
                                 f"{f' with version {version!r}' if version else ''} to accept (versions: {versions})")
        self._db.execute("INSERT OR IGNORE INTO acceptances VALUES (?, ?, ?)",
                         (note.note_id, person, datetime.now(UTC).isoformat(timespec="seconds")))
        return self._by_id(note.note_id)

    def notes(self, library_id: str | None = None) -> list[Note]:
        """Every current note (of one library, or all), by item and task."""
        heads = self._db.execute(
            "SELECT h.note_id FROM note_history h WHERE h.seq = (SELECT max(seq) FROM note_history g WHERE "
            "g.library_id = h.library_id AND g.item_key = h.item_key AND g.task_key = h.task_key)"
            + (" AND h.library_id = ?" if library_id is not None else ""),
            (library_id,) if library_id is not None else ()).fetchall()
        found = [self._by_id(note_id) for (note_id,) in heads]
        return sorted(found, key=lambda n: (n.item.library_id, n.item.item_key, n.task_key))

    # tags ------------------------------------------------------------------------------------------------------

    def add_tag(self, item: Item | ItemRef, tag: str) -> None:
        """Put a `factlab/` tag on the item (in this store; the user's tags are untouched)."""
        ref = item.ref if isinstance(item, Item) else item
        self._db.execute("INSERT OR IGNORE INTO tags VALUES (?, ?, ?)", (*ref.key, check_tag(tag)))

    def remove_tag(self, item: Item | ItemRef, tag: str) -> None:
        """Take a `factlab/` tag off the item (a user tag cannot be named here)."""
        ref = item.ref if isinstance(item, Item) else item
        self._db.execute("DELETE FROM tags WHERE library_id = ? AND item_key = ? AND tag = ?",
                         (*ref.key, check_tag(tag)))

    def tags(self, item: Item | ItemRef) -> list[str]:
        """The item's `factlab/` tags, sorted."""
        ref = item.ref if isinstance(item, Item) else item
        return [r[0] for r in self._db.execute("SELECT tag FROM tags WHERE library_id = ? AND item_key = ? "
                                               "ORDER BY tag", ref.key)]

    def tagged(self) -> list[tuple[str, str]]:
        """(library_id, item_key) of every item that carries a factlab tag."""
        return [tuple(r) for r in self._db.execute("SELECT DISTINCT library_id, item_key FROM tags ORDER BY 1, 2")]


def _int_or_str(value: str) -> int | str:
    """An item version as it was given: Zotero's are integers, file-based libraries' are hashes.

    >>> _int_or_str("12"), _int_or_str("a1b2")
    (12, 'a1b2')
    """
    return int(value) if value.isdigit() else value
