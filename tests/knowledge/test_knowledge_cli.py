"""`python -m factlab.knowledge`: import writes corpus, items and duplicates; export writes the notes; errors are one
line with exit status 2."""

from __future__ import annotations

import json

from knowledge_support import ABSTRACT, PDF_TEXT, sha256

from factlab.knowledge.cli import main
from factlab.knowledge.store import NoteStore
from factlab.knowledge.zotero import read_zotero


def _corpus(out):
    return [json.loads(line) for line in (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]


def test_import_writes_corpus_items_and_duplicates(zotero_db, tmp_path, capsys):
    before = sha256(zotero_db)
    out = tmp_path / "kb"
    assert main(["import", "--zotero", str(zotero_db), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["items"], summary["sources"], summary["skipped"], summary["duplicate_suggestions"]) == (3, 2, 1, 1)
    assert _corpus(out)[0]["text"] == ABSTRACT
    assert [i["item_key"] for i in json.loads((out / "items.json").read_text(encoding="utf-8"))] == [
        "JRNL2345", "PRE23456", "BOOK2345"]
    assert json.loads((out / "duplicates.json").read_text(encoding="utf-8"))[0]["a"] == "zotero:1/JRNL2345@5"
    assert main(["import", "--zotero", str(zotero_db), "--copy", "--read-attachments", "--out", str(out)]) == 0
    assert _corpus(out)[0]["text"] == PDF_TEXT
    assert sha256(zotero_db) == before


def test_export_writes_the_notes(zotero_db, tmp_path, capsys):
    store_path = tmp_path / "kb" / "notes.sqlite"
    with NoteStore(store_path) as store:
        store.upsert(read_zotero(zotero_db).items[0], "verify/r1", "checked")
    out = tmp_path / "notes.csl.json"
    assert main(["export", "--zotero", str(zotero_db), "--store", str(store_path), "--out", str(out), "--csl"]) == 0
    [record] = json.loads(out.read_text(encoding="utf-8"))
    assert record["id"] == "JRNL2345" and record["note"] == "[factlab verify/r1]\nchecked"


def test_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["import", "--bibtex", str(tmp_path / "missing.bib"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'missing.bib'}: no such BibTeX file"
