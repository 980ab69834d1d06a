"""The knowledge layer: where sources come from (a user's reference library, read-only) and where factlab's results
go (its own note store, exportable).

- `items`: identity (`library_id + item_key + version`), read-only metadata, user notes, attachment paths.
- readers: `zotero.read_zotero` (zotero.sqlite, read-only), `csljson.read_csl_json`, `bibtex.read_bibtex`,
  `folder.read_folder`; each returns a `Library`.
- `attachments`: files are read only under a per-task `AttachmentGrant`.
- `identity.suggest_duplicates`: DOI / arXiv / title+author+year suggestions, never identity.
- `store.NoteStore`: one child note per (item, task), idempotent upsert, undo, `factlab/*` tags; `export`: JSON and
  CSL-JSON with the note bodies.
- `citations`: resolve a citation to an item (the checker's citation model, factlab.matching.citations); `CitationCheck`
  keeps "exists" apart from "supports".
- `sources.to_source_records`: items as source records for the retriever; `cli`: `python -m factlab.knowledge`.
- `results.write_card_notes` / `write_notes`: a verify run's report (a Report or cards.json, read as plain JSON) back
  as one note per used item and task; `NoteStore.accept`: a person accepts a note, and only then is it a source.

Nothing here runs at import time; docs/knowledge.md explains the rules.
"""
