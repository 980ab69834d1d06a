"""Zotero import: what is read, that the database is never written (checksum), the copy and lock paths."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3

import pytest
from knowledge_support import ABSTRACT, ARTICLE_TITLE, PDF_TEXT, USER_NOTE, build_zotero, sha256, tree_sha256

from factlab.knowledge.attachments import AttachmentGrant
from factlab.knowledge.citations import check_citation, record_checks
from factlab.knowledge.export import export_csl_json, export_json
from factlab.knowledge.items import ItemRef, KnowledgeError
from factlab.knowledge.sources import to_source_records, write_corpus
from factlab.knowledge.store import NoteStore
from factlab.knowledge.zotero import open_read_only, read_zotero


def test_import_reads_items_fields_creators_notes_attachments_tags_collections(zotero_db):
    library = read_zotero(zotero_db)
    assert [item.ref.item_key for item in library] == ["JRNL2345", "PRE23456", "BOOK2345"]  # trash, notes skipped
    article = library.get("zotero:1", "JRNL2345")
    assert article.ref == ItemRef("zotero:1", "JRNL2345", 5)
    assert (article.title, article.year, article.date, article.doi, article.venue, article.abstract) == (
        ARTICLE_TITLE, 2021, "May 2021", "10.1016/j.hist.2021.01.002", "Journal of Medical History", ABSTRACT)
    assert [(c.family, c.given, c.role) for c in article.creators] == [("Fleming", "Alexander", "author"),
                                                                       ("Editor", "Ann", "editor")]
    assert [c.family for c in article.authors] == ["Fleming"]
    assert article.tags == ("to-read",) and article.collections == ("Thesis/Chapter 1",)
    assert [(n.key, n.body) for n in article.notes] == [("CHLD2345", USER_NOTE)]
    [pdf] = article.attachments
    assert pdf.path == zotero_db.parent / "storage" / "PDF23456" / "fleming.pdf" and pdf.key == "PDF23456"
    book = library.get("zotero:1", "BOOK2345")
    assert book.attachments[0].path == zotero_db.parent / "linked" / "florey.html"
    assert library.get("zotero:1", "PRE23456").venue == "arXiv"


def test_metadata_is_read_only(zotero_db):
    article = read_zotero(zotero_db).items[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        article.title = "edited"  # type: ignore[misc]


def test_the_connection_refuses_writes(zotero_db):
    with open_read_only(zotero_db) as db, pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query"):
        db.execute("UPDATE items SET version = 99")


def test_database_and_attachments_unchanged_after_import_and_a_full_run(zotero_db, tmp_path):
    data_dir = zotero_db.parent
    before, files_before = sha256(zotero_db), tree_sha256(data_dir)
    library = read_zotero(zotero_db)
    grant = AttachmentGrant.every_item("verify/run1", "zotero:1")
    export = to_source_records(library, grant)
    write_corpus(export, tmp_path / "out" / "corpus.jsonl")
    checks = [check_citation(library, "Fleming found penicillin in 1928.", "10.1016/J.HIST.2021.01.002", "support"),
              check_citation(library, "Florey purified it.", "The Mould in Dr Florey's Coat", "partial support")]
    with NoteStore(tmp_path / "out" / "notes.sqlite", [library]) as store:
        upserts, missing = record_checks(store, "verify/run1", checks)
        export_json(store, [library], tmp_path / "out" / "notes.json")
        export_csl_json(store, [library], tmp_path / "out" / "notes.csl.json")
    assert [u.action for u in upserts] == ["created", "created"] and not missing
    assert sha256(zotero_db) == before
    assert tree_sha256(data_dir) == files_before  # no -wal/-journal left behind, attachments untouched
    again = read_zotero(zotero_db)
    assert again.get("zotero:1", "JRNL2345").notes == library.get("zotero:1", "JRNL2345").notes  # user notes intact
    assert again.get("zotero:1", "JRNL2345").tags == ("to-read",)  # the user's tags untouched
    assert PDF_TEXT in next(r["text"] for r in export.records if r["title"] == ARTICLE_TITLE)


def test_copy_mode_reads_a_temporary_copy(zotero_db):
    before = sha256(zotero_db)
    assert [i.ref for i in read_zotero(zotero_db, copy=True)] == [i.ref for i in read_zotero(zotero_db, copy=False)]
    assert sha256(zotero_db) == before


def test_a_locked_database_is_read_through_a_copy(tmp_path):
    path = build_zotero(tmp_path / "Zotero")
    holder = sqlite3.connect(path)  # what a running Zotero does: keep the database exclusively locked
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(KnowledgeError, match="--copy"):
            read_zotero(path, copy=False)
        assert len(read_zotero(path)) == 3  # copy=None: falls back to a copy
    finally:
        holder.rollback()
        holder.close()


def test_not_a_zotero_database_is_a_clear_error(tmp_path):
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(KnowledgeError, match="not a Zotero database.*missing tables"):
        read_zotero(other)
    with pytest.raises(KnowledgeError, match="no such Zotero database"):
        read_zotero(tmp_path / "missing.sqlite")


def test_a_second_zotero_installation_gets_its_own_library_ids(zotero_db, tmp_path):
    copy = tmp_path / "laptop" / "zotero.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(zotero_db, copy)
    assert read_zotero(copy, name="laptop").items[0].ref.library_id == "laptop:1"
