"""python -m factlab.knowledge import --zotero path/to/zotero.sqlite --out outputs/knowledge

Import a library read-only and write, under --out, `corpus.jsonl` (source records for Retriever.build),
`items.json` (identity, `source_id` (null when the item made no source record) and unchanged metadata of every item),
`library.json` (the library's name and origin) and `duplicates.json` (suggested duplicate pairs); `notes` writes a
verify run's cards back as child notes (factlab.knowledge.results); `accept` records that a person accepted a note
(only then does `import --notes` make it a source); `export` exports the notes:

    python -m factlab.knowledge import --zotero ~/Zotero/zotero.sqlite --copy --out outputs/knowledge
    python -m factlab.knowledge import --bibtex refs.bib --attachments pdfs/ --read-attachments --out outputs/kb
    python -m factlab.knowledge import --csl-json library.json --out outputs/kb
    python -m factlab.knowledge import --folder sources/ --read-attachments --out outputs/kb
    python -m factlab.knowledge notes --library outputs/kb --cards outputs/verify --store outputs/kb/notes.sqlite
    python -m factlab.knowledge accept --store outputs/kb/notes.sqlite --library-id zotero:1 --item-key ABCD2345 \
        --task verify/report.md --by "Ann Lee"
    python -m factlab.knowledge import --zotero ~/Zotero/zotero.sqlite --notes outputs/kb/notes.sqlite --out outputs/kb
    python -m factlab.knowledge export --store outputs/kb/notes.sqlite --bibtex refs.bib --out notes.json [--csl]

Attachments are read only with --read-attachments (a grant for this import task); without it the text of a source
is its abstract.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from factlab.atomic import write_json
from factlab.knowledge.attachments import AttachmentGrant
from factlab.knowledge.bibtex import read_bibtex
from factlab.knowledge.csljson import read_csl_json, to_csl
from factlab.knowledge.export import export_csl_json, export_json
from factlab.knowledge.folder import read_folder
from factlab.knowledge.identity import suggest_duplicates
from factlab.knowledge.items import ItemRef, KnowledgeError, Library
from factlab.knowledge.results import ITEMS_FILE, LIBRARY_FILE, write_notes
from factlab.knowledge.sources import to_source_records, write_corpus
from factlab.knowledge.store import NoteStore
from factlab.knowledge.zotero import read_zotero

IMPORT_TASK = "import"  # the task key of a command-line import's attachment grant


def _add_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--zotero", type=Path, help="a zotero.sqlite file (opened read-only)")
    source.add_argument("--csl-json", type=Path, help="a CSL-JSON export")
    source.add_argument("--bibtex", type=Path, help="a BibTeX (.bib) export")
    source.add_argument("--folder", type=Path, help="a plain folder of source files")
    parser.add_argument("--attachments", type=Path, help="attachment folder (CSL-JSON / BibTeX: files named by key; "
                        "Zotero: its storage/ folder)")
    parser.add_argument("--copy", action="store_true", help="Zotero: read a temporary copy (Zotero is running)")


def load_library(args: argparse.Namespace) -> Library:
    """The library the source arguments name."""
    if args.zotero:
        return read_zotero(args.zotero, copy=True if args.copy else None, storage_dir=args.attachments)
    if args.csl_json:
        return read_csl_json(args.csl_json, args.attachments)
    if args.bibtex:
        return read_bibtex(args.bibtex, args.attachments)
    return read_folder(args.folder)


def run_import(library: Library, out: Path, read_attachments: bool, notes: NoteStore | None = None) -> dict:
    """Write corpus.jsonl, items.json and duplicates.json for `library` under `out`; return the counts. With
    `notes`, factlab notes a person accepted are sources too (the others are withheld and counted)."""
    library_ids = sorted({item.ref.library_id for item in library})  # a Zotero file may hold group libraries too
    grants = [AttachmentGrant.every_item(IMPORT_TASK, lid) for lid in library_ids] if read_attachments else None
    export = to_source_records(library, grants, notes)
    write_corpus(export, out / "corpus.jsonl")
    source_of = {ref: source_id for source_id, ref in export.refs.items()}
    write_json(out / ITEMS_FILE, [{"library_id": i.ref.library_id, "item_key": i.ref.item_key,
                                   "version": i.ref.version, "source_id": source_of.get(i.ref),
                                   "metadata": to_csl(i)} for i in library], indent=1)
    write_json(out / LIBRARY_FILE, {"name": library.name, "origin": str(Path(library.origin).resolve()),
                                    "library_ids": library_ids}, indent=1)
    pairs = suggest_duplicates(library)
    write_json(out / "duplicates.json", [{"a": str(s.a), "b": str(s.b), "reasons": list(s.reasons),
                                          "score": s.score} for s in pairs], indent=1)
    return {"items": len(library), "sources": len(export.records), "skipped": len(export.skipped),
            "notes_as_sources": len(export.note_refs), "notes_withheld": len(export.withheld_notes),
            "duplicate_suggestions": len(pairs), "problems": list(library.problems)}


def accept_note(store: Path, item: ItemRef, task_key: str, person: str, version: str | None) -> dict:
    """Accept the (item, task) note in the store at `store` (which must exist); return what was accepted."""
    if not store.is_file():
        raise KnowledgeError(f"{store}: no note store there; pass the --store that `notes` wrote")
    with NoteStore(store) as opened:
        note = opened.accept(item, task_key, person, version)
    return {"item": f"{note.item.library_id}/{note.item.item_key}", "task": note.task_key, "version": note.version,
            "current": note.current, "written_by": note.written_by, "accepted_by": note.accepted_by,
            "accepted_at": note.accepted_at}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m factlab.knowledge", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    importer = commands.add_parser("import", help="import a library read-only into source records")
    _add_source(importer)
    importer.add_argument("--out", type=Path, required=True, help="output folder")
    importer.add_argument("--read-attachments", action="store_true", help="grant this import reading attachments")
    importer.add_argument("--notes", type=Path, help="factlab's note store: notes a person accepted become sources")
    exporter = commands.add_parser("export", help="export factlab's notes and tags with the items' metadata")
    _add_source(exporter)
    exporter.add_argument("--store", type=Path, required=True, help="factlab's note store (notes.sqlite)")
    exporter.add_argument("--out", type=Path, required=True, help="the .json file to write")
    exporter.add_argument("--csl", action="store_true", help="CSL-JSON with the note bodies in `note`")
    exporter.add_argument("--all-versions", action="store_true", help="every note version, not only the current")
    notes = commands.add_parser("notes", help="write a verify run's results back as notes in factlab's own store")
    notes.add_argument("--library", type=Path, required=True, help="the folder `import` wrote (items.json)")
    notes.add_argument("--cards", type=Path, required=True, help="a verify output folder, or its cards.json")
    notes.add_argument("--store", type=Path, required=True, help="factlab's note store (notes.sqlite)")
    notes.add_argument("--task", help="the task key of the notes (default: verify/<the checked document's name>)")
    accept = commands.add_parser("accept", help="accept factlab's note on an item: only then may it be evidence")
    accept.add_argument("--store", type=Path, required=True, help="factlab's note store (notes.sqlite)")
    accept.add_argument("--library-id", required=True, help="the item's library id (e.g. zotero:1, see export)")
    accept.add_argument("--item-key", required=True, help="the item's key")
    accept.add_argument("--task", required=True, help="the note's task key (e.g. verify/report.md)")
    accept.add_argument("--by", required=True, help="your name: the person who read and accepts the note")
    accept.add_argument("--version", help="the note version to accept (default: the current one)")
    args = parser.parse_args(argv)
    try:
        if args.command == "notes":
            summary = write_notes(args.library, args.cards, args.store, args.task).summary()
        elif args.command == "accept":
            summary = accept_note(args.store, ItemRef(args.library_id, args.item_key, ""), args.task, args.by,
                                  args.version)
        elif args.command == "import":
            library = load_library(args)
            if args.notes is None:
                summary = run_import(library, args.out, args.read_attachments)
            elif not args.notes.is_file():
                raise KnowledgeError(f"--notes {args.notes}: no note store there; pass the --store that `notes` wrote")
            else:
                with NoteStore(args.notes, [library]) as store:
                    summary = run_import(library, args.out, args.read_attachments, store)
        else:
            library = load_library(args)
            with NoteStore(args.store, [library]) as store:
                if args.csl:
                    export_csl_json(store, [library], args.out)
                else:
                    export_json(store, [library], args.out, all_versions=args.all_versions)
            summary = {"written": str(args.out)}
    except KnowledgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    return 0
