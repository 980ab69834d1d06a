"""Export what factlab wrote (notes and `factlab/` tags) with the items' unchanged metadata: as JSON, or as CSL-JSON
whose `note` field carries the note bodies (a reference manager can import it as a new collection; factlab never
writes into the user's library itself). Files are written atomically.

>>> note_field([("verify/run1", "2 citations: 1 supported."), ("qa", "ok")])
'[factlab verify/run1]\\n2 citations: 1 supported.\\n\\n[factlab qa]\\nok'
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from factlab.atomic import write_json
from factlab.knowledge.csljson import to_csl
from factlab.knowledge.items import Item, ItemRef, KnowledgeError, Library
from factlab.knowledge.store import Note, NoteStore


def note_field(notes: list[tuple[str, str]]) -> str:
    """(task_key, body) pairs as one CSL `note` text, each body under a `[factlab <task>]` line."""
    return "\n\n".join(f"[factlab {task}]\n{body}" for task, body in notes)


def _note_record(note: Note) -> dict:
    return {"task_key": note.task_key, "version": note.version, "item_version": note.item.version,
            "body": note.body, "data": note.data, "created_at": note.created_at, "current": note.current,
            "written_by": note.written_by, "accepted_by": note.accepted_by, "accepted_at": note.accepted_at}


def _touched(store: NoteStore, libraries: list[Library]) -> list[tuple[ItemRef, Item | None, list[Note]]]:
    """Every item with a factlab note or tag: its ref, its item where a library has it, its current notes."""
    current: dict[tuple[str, str], list[Note]] = defaultdict(list)
    for note in store.notes():
        current[note.item.key].append(note)
    keys = set(current) | set(store.tagged())
    found: dict[tuple[str, str], Item] = {}
    for library in libraries:
        for item in library:
            if item.ref.key in keys:
                found.setdefault(item.ref.key, item)
    return [(found[key].ref if key in found else ItemRef(*key, ""), found.get(key), current[key])
            for key in sorted(keys)]


def export_json(store: NoteStore, libraries: list[Library], path: str | Path, all_versions: bool = False) -> Path:
    """Write one record per touched item: identity, metadata (CSL, unchanged; null when no library has the item),
    `factlab/` tags and notes (the current ones, or `all_versions`). Returns the path."""
    records = []
    for ref, item, current in _touched(store, libraries):
        notes = [v for n in current for v in store.versions(ref, n.task_key)] if all_versions else current
        records.append({"library_id": ref.library_id, "item_key": ref.item_key,
                        "version": ref.version if item is not None else None,
                        "metadata": to_csl(item) if item is not None else None,
                        "factlab_tags": store.tags(ref), "notes": [_note_record(n) for n in notes]})
    return write_json(path, records, indent=1)


def export_csl_json(store: NoteStore, libraries: list[Library], path: str | Path) -> Path:
    """Write the touched items as CSL-JSON: metadata unchanged, `note` = the current factlab note bodies, and a
    `factlab` object with tags and notes. An item that no library passed holds cannot be written so; that is an
    error naming it (export_json keeps such items, without metadata). Returns the path."""
    records = []
    for ref, item, notes in _touched(store, libraries):
        if item is None:
            raise KnowledgeError(f"{ref.library_id}/{ref.item_key} has factlab notes but is in none of the libraries "
                                 "passed; pass its library, or use export_json (which keeps it without metadata)")
        record = to_csl(item)
        if notes:
            record["note"] = note_field([(n.task_key, n.body) for n in notes])
        record["factlab"] = {"library_id": ref.library_id, "version": ref.version, "tags": store.tags(ref),
                             "notes": [_note_record(n) for n in notes]}
        records.append(record)
    return write_json(path, records, indent=1)
