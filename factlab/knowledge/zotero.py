"""Read a Zotero library from its SQLite file (`zotero.sqlite`), read-only.

The file is opened with `mode=ro` and `PRAGMA query_only`, so nothing can write it. A running Zotero holds the
database locked; `copy=True` (or the automatic fallback when the file is locked) copies it, with its -wal/-journal
files, to a temporary folder and reads the copy. Items in the trash (`deletedItems`), notes, attachments and
annotations as top-level items are skipped; every regular item comes with its fields, creators, tags, collection
paths, child notes and attachment paths (`storage:<name>` -> `<data dir>/storage/<attachment key>/<name>`,
`attachments:<rel>` -> `<base_dir>/<rel>`, an absolute path as it is).

>>> zotero_year("2020-03-00 March 2020"), zotero_year("0000-00-00 n.d."), zotero_year("")
(2020, None, None)
>>> zotero_date("2020-03-00 March 2020")
'March 2020'
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from factlab.knowledge.items import Attachment, Creator, Item, ItemRef, KnowledgeError, Library, UserNote

NON_ITEM_TYPES = ("note", "attachment", "annotation")  # item types that are not bibliographic items
# Zotero field names that hold the venue, by item type (journal, proceedings, book section, preprint server...).
VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "bookTitle", "repository", "websiteTitle", "blogTitle",
                "conferenceName", "institution", "university", "publisher")
# A running Zotero holds its lock for as long as it runs: waiting longer than a moment only delays the copy.
LOCK_WAIT_S = 0.5
_CORE_FIELDS = {"title", "date", "DOI", "abstractNote", "url", "citationKey", *VENUE_FIELDS}


def zotero_year(value: str) -> int | None:
    """The year of a Zotero date field ("YYYY-MM-DD original text"), None when unknown."""
    head = value[:4]
    return int(head) if head.isdigit() and head != "0000" else None


def zotero_date(value: str) -> str:
    """The date as the user typed it (the part after Zotero's sortable "YYYY-MM-DD " prefix)."""
    head, _, rest = value.partition(" ")
    return rest if len(head) == 10 and head[4] == "-" and rest else value


def _read_only_uri(path: Path) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro"


@contextlib.contextmanager
def open_read_only(path: str | Path, copy: bool | None = None) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the Zotero database at `path`.

    Args:
        path: the `zotero.sqlite` file.
        copy: True = read a temporary copy (Zotero is running); False = read the file itself; None = the file
            itself, and a copy when it is locked.
    """
    path = Path(path)
    if not path.is_file():
        raise KnowledgeError(f"{path}: no such Zotero database; pass the zotero.sqlite file of your Zotero data "
                             "directory (Zotero > Settings > Advanced > Files and Folders)")
    if copy:
        with tempfile.TemporaryDirectory(prefix="factlab-zotero-") as tmp:
            target = Path(tmp) / path.name
            for suffix in ("", "-wal", "-journal"):
                if (source := path.with_name(path.name + suffix)).exists():
                    shutil.copyfile(source, target.with_name(target.name + suffix))
            with open_read_only(target, copy=False) as connection:
                yield connection
        return
    connection = sqlite3.connect(_read_only_uri(path), uri=True, timeout=LOCK_WAIT_S)
    try:
        connection.execute("PRAGMA query_only = ON")
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            if copy is None and "locked" in str(exc):
                connection.close()
                with open_read_only(path, copy=True) as copied:
                    yield copied
                return
            raise KnowledgeError(f"{path}: cannot open the Zotero database read-only ({exc}); close Zotero or "
                                 "pass copy=True (--copy)") from None
        yield connection
    finally:
        connection.close()


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _check_schema(connection: sqlite3.Connection, path: Path) -> set[str]:
    tables = _tables(connection)
    needed = {"items", "itemTypes", "itemData", "itemDataValues", "fields", "libraries"}
    if missing := sorted(needed - tables):
        raise KnowledgeError(f"{path}: not a Zotero database (missing tables {', '.join(missing)}); pass the "
                             "zotero.sqlite file, not a copy of another program's database")
    return tables


def _collection_paths(connection: sqlite3.Connection) -> dict[int, str]:
    rows = {cid: (name, parent) for cid, name, parent in
            connection.execute("SELECT collectionID, collectionName, parentCollectionID FROM collections")}

    def path(cid: int, depth: int = 0) -> str:
        name, parent = rows[cid]
        return f"{path(parent, depth + 1)}/{name}" if parent in rows and depth < 50 else name

    return {cid: path(cid) for cid in rows}


def _attachment_path(raw: str | None, attachment_key: str, storage: Path, base_dir: Path | None) -> Path | None:
    if not raw:
        return None
    if raw.startswith("storage:"):
        return storage / attachment_key / raw.removeprefix("storage:")
    if raw.startswith("attachments:"):
        return base_dir / raw.removeprefix("attachments:") if base_dir is not None else None
    return Path(raw)


def read_zotero(path: str | Path, copy: bool | None = None, storage_dir: str | Path | None = None,
                base_dir: str | Path | None = None, name: str = "zotero") -> Library:
    """Every regular item of a Zotero database, read-only.

    Args:
        path: the `zotero.sqlite` file (never written).
        copy: see `open_read_only`.
        storage_dir: Zotero's `storage/` folder; default: beside the database.
        base_dir: the "Linked Attachment Base Directory" for `attachments:` paths (None: those stay unresolved).
        name: prefix of the library ids (`<name>:<libraryID>`), to tell two Zotero installations apart.
    """
    path = Path(path)
    storage = Path(storage_dir) if storage_dir is not None else path.parent / "storage"
    base = Path(base_dir) if base_dir is not None else None
    with open_read_only(path, copy) as db:
        tables = _check_schema(db, path)
        deleted = {r[0] for r in db.execute("SELECT itemID FROM deletedItems")} if "deletedItems" in tables else set()
        rows = db.execute(
            "SELECT i.itemID, i.key, i.version, i.libraryID, t.typeName FROM items i "
            "JOIN itemTypes t ON t.itemTypeID = i.itemTypeID ORDER BY i.itemID").fetchall()
        keys = {item_id: key for item_id, key, *_ in rows}
        fields: dict[int, dict[str, str]] = defaultdict(dict)
        for item_id, field, value in db.execute(
                "SELECT d.itemID, f.fieldName, v.value FROM itemData d JOIN fields f ON f.fieldID = d.fieldID "
                "JOIN itemDataValues v ON v.valueID = d.valueID"):
            fields[item_id][field] = str(value)
        creators: dict[int, list[Creator]] = defaultdict(list)
        if {"creators", "itemCreators"} <= tables:
            typed = "creatorTypes" in tables  # creator roles (author, editor...); without it all are authors
            role = "ct.creatorType" if typed else "'author'"
            join = "LEFT JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID" if typed else ""
            for item_id, first, last, kind in db.execute(
                    f"SELECT ic.itemID, c.firstName, c.lastName, {role} FROM itemCreators ic "
                    f"JOIN creators c ON c.creatorID = ic.creatorID {join} ORDER BY ic.itemID, ic.orderIndex"):
                creators[item_id].append(Creator(last or "", first or "", kind or "author"))
        tags: dict[int, list[str]] = defaultdict(list)
        if {"tags", "itemTags"} <= tables:
            for item_id, tag in db.execute("SELECT it.itemID, t.name FROM itemTags it JOIN tags t "
                                           "ON t.tagID = it.tagID ORDER BY t.name"):
                tags[item_id].append(tag)
        collections: dict[int, list[str]] = defaultdict(list)
        if {"collections", "collectionItems"} <= tables:
            paths = _collection_paths(db)
            for cid, item_id in db.execute("SELECT collectionID, itemID FROM collectionItems"):
                collections[item_id].append(paths[cid])
        notes: dict[int, list[UserNote]] = defaultdict(list)
        if "itemNotes" in tables:
            for item_id, parent, note, title in db.execute(
                    "SELECT itemID, parentItemID, note, title FROM itemNotes ORDER BY itemID"):
                if parent is not None and item_id not in deleted:
                    notes[parent].append(UserNote(keys.get(item_id, ""), note or "", title or ""))
        attachments: dict[int, list[Attachment]] = defaultdict(list)
        if "itemAttachments" in tables:
            for item_id, parent, content_type, raw in db.execute(
                    "SELECT itemID, parentItemID, contentType, path FROM itemAttachments ORDER BY itemID"):
                if parent is not None and item_id not in deleted:
                    key = keys.get(item_id, "")
                    located = _attachment_path(raw, key, storage, base)
                    attachments[parent].append(Attachment(located, content_type or "", key,
                                                          fields[item_id].get("title", "")))
    items = []
    for item_id, key, version, library_id, type_name in rows:
        if type_name in NON_ITEM_TYPES or item_id in deleted:
            continue
        data = fields[item_id]
        extra = tuple((f, v) for f, v in sorted(data.items()) if f not in _CORE_FIELDS)
        extra_text = data.get("extra", "")
        citation_key = data.get("citationKey", "") or next(
            (line.split(":", 1)[1].strip() for line in extra_text.splitlines()
             if line.lower().startswith("citation key:")), "")
        items.append(Item(
            ref=ItemRef(f"{name}:{library_id}", key, int(version or 0)),
            item_type=type_name,
            title=data.get("title", ""),
            creators=tuple(creators[item_id]),
            year=zotero_year(data.get("date", "")),
            doi=data.get("DOI", ""),
            venue=next((data[f] for f in VENUE_FIELDS if data.get(f)), ""),
            abstract=data.get("abstractNote", ""),
            url=data.get("url", ""),
            date=zotero_date(data.get("date", "")),
            citation_key=citation_key,
            extra=extra,
            tags=tuple(tags[item_id]),
            collections=tuple(sorted(collections[item_id])),
            notes=tuple(notes[item_id]),
            attachments=tuple(attachments[item_id]),
        ))
    return Library(path.name, path, tuple(items))
