"""Imported items as factlab source records (datasets/README.md), so the retriever can index them.

The text is the item's first readable attachment when a grant covers the item, else its abstract; an item with
neither is skipped with the reason. `source_id` is a slug of the library and key plus a short hash of both, so it
is stable across re-imports and unique across libraries; `SourceExport.refs` maps it back to the item.

factlab's own notes (factlab.knowledge.store) become sources only when a person accepted them: the current note of an
item, accepted, is one more record (`<item source_id>-note-<n>`, its title saying it is a factlab note and who
accepted it); every other note is left out and counted. The user's own notes and extra fields are never source text,
so a factlab note exported into the user's library (export.py) does not come back that way either.

>>> source_id_for(ItemRef("zotero:1", "ABCD2345", 3))
'zotero-1-abcd2345-537c3d0d'
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from factlab.atomic import write_text
from factlab.knowledge.attachments import AttachmentGrant, read_attachment, readable_attachments
from factlab.knowledge.items import Item, ItemRef, KnowledgeError
from factlab.knowledge.store import Note, NoteStore
from factlab.schema import detect_language


def source_id_for(ref: ItemRef) -> str:
    """A source id (`[a-z0-9-]+`) for an item: slug of `<library_id>-<item_key>` and 8 hex of their sha1."""
    identity = f"{ref.library_id}/{ref.item_key}"
    ascii_text = unicodedata.normalize("NFKD", f"{ref.library_id}-{ref.item_key}").encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:48].strip("-")
    return f"{slug or 'item'}-{hashlib.sha1(identity.encode('utf-8')).hexdigest()[:8]}"


def note_source_id(note: Note) -> str:
    """The source id of an accepted factlab note: its item's source id, `-note-` and the note's id in the store.

    >>> note = Note(7, ItemRef("zotero:1", "ABCD2345", 3), "verify/r1", "v1", "body", {}, "", True, "Ann", "")
    >>> note_source_id(note)
    'zotero-1-abcd2345-537c3d0d-note-7'
    """
    return f"{source_id_for(note.item)}-note-{note.note_id}"


@dataclass
class SourceExport:
    """Source records made from items (and from factlab notes a person accepted), their items, and what was left out.

    Attributes:
        records: the source records.
        refs: source_id -> the item version it was made from (items only).
        skipped: items without a record, with why.
        note_refs: source_id of an accepted note's record -> the item the note is about.
        withheld_notes: (item, task) of every current factlab note left out because nobody accepted it.
    """

    records: list[dict] = field(default_factory=list)
    refs: dict[str, ItemRef] = field(default_factory=dict)
    skipped: list[tuple[ItemRef, str]] = field(default_factory=list)
    note_refs: dict[str, ItemRef] = field(default_factory=dict)
    withheld_notes: list[tuple[ItemRef, str]] = field(default_factory=list)


def work_record(item: Item) -> dict:
    """The fields of the item's source record that name the work (`title`, `author`, `year`, `doi`), as the citation
    model (factlab.matching.citations) reads them: absent ones left out, the title the key when there is none.

    >>> from factlab.knowledge.items import Creator
    >>> work_record(Item(ItemRef("csl:x", "k1", "v"), "book", "", (Creator("Lee", "Ann"), Creator("张", "三")), 2017))
    {'title': 'k1', 'author': 'Ann Lee; 张三', 'year': 2017}
    """
    record: dict = {"title": item.title or item.ref.item_key}
    if item.authors:
        record["author"] = "; ".join(c.name for c in item.authors)
    for key, value in (("year", item.year), ("doi", item.doi)):
        if value:
            record[key] = value
    return record


def _record(item: Item, pages: list[str]) -> dict:
    record: dict = {"source_id": source_id_for(item.ref), **work_record(item)}
    if len(pages) == 1:
        record["text"] = pages[0]
    else:
        record["pages"] = pages
    if item.url:
        record["url"] = item.url
    record["lang"] = detect_language(" ".join(pages)[:4000])
    return record


def _note_source(note: Note, item: Item) -> dict:
    title = f"factlab note on {item.title or item.ref.item_key} ({note.task_key}), accepted by {note.accepted_by}"
    return {"source_id": note_source_id(note), "title": title, "text": note.body,
            "lang": detect_language(note.body[:4000])}


def to_source_records(items: Iterable[Item], grant: AttachmentGrant | Iterable[AttachmentGrant] | None = None,
                      notes: NoteStore | None = None) -> SourceExport:
    """Source records for the items: attachment text where a grant covers the item, else the abstract; and, with
    `notes`, one record per current factlab note on an item that a person accepted (the others are withheld).

    Args:
        items: a Library or any items.
        grant: the task's attachment grant, or one per library; None reads no attachment (abstracts only).
        notes: factlab's note store; None makes no note a source.
    """
    grants = [grant] if isinstance(grant, AttachmentGrant) else list(grant or ())
    export = SourceExport()
    items = list(items)
    for item in items:
        pages: list[str] = []
        reason = "no abstract"
        if covering := next((g for g in grants if g.covers(*item.ref.key)), None):
            attachments = readable_attachments(item)
            reason = "no abstract and no readable attachment" if not attachments else reason
            for attachment in attachments:
                try:
                    pages = read_attachment(item, attachment, covering)
                except KnowledgeError as exc:
                    reason = str(exc)
                    continue
                if any(page.strip() for page in pages):
                    break
                pages, reason = [], f"no text in {attachment.path.name} (a scan?)"
        else:
            reason = "no abstract (its attachments need a grant)" if item.attachments else reason
        if not any(page.strip() for page in pages):
            pages = [item.abstract] if item.abstract.strip() else []
        if not pages:
            export.skipped.append((item.ref, reason))
            continue
        pages = [page if page.strip() else "[page without extractable text]" for page in pages]
        record = _record(item, pages)
        export.records.append(record)
        export.refs[record["source_id"]] = item.ref
    if notes is not None:
        _add_notes(export, items, notes)
    return export


def _add_notes(export: SourceExport, items: list[Item], notes: NoteStore) -> None:
    by_item = {item.ref.key: item for item in items}
    for note in notes.notes():
        if note.item.key not in by_item:
            continue
        if not note.accepted:  # the loop guard: factlab's own finding is never evidence until a person accepts it
            export.withheld_notes.append((note.item, note.task_key))
            continue
        record = _note_source(note, by_item[note.item.key])
        export.records.append(record)
        export.note_refs[record["source_id"]] = by_item[note.item.key].ref


def write_corpus(export: SourceExport, path: str | Path) -> Path:
    """Write the records as a corpus file (one JSON record per line), atomically; returns the path. A folder
    holding it can be passed to `Retriever.build`."""
    lines = (json.dumps(record, ensure_ascii=False) for record in export.records)
    return write_text(path, "".join(line + "\n" for line in lines))
