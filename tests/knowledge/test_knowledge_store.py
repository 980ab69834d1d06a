"""The note store: idempotent upsert, versions and undo, factlab/* tags only, never inside the user's library,
exports with the note bodies."""

from __future__ import annotations

import json
import sqlite3

import pytest

from factlab.knowledge.export import export_csl_json, export_json
from factlab.knowledge.folder import read_folder
from factlab.knowledge.items import ItemRef, KnowledgeError
from factlab.knowledge.store import NoteStore
from factlab.knowledge.zotero import read_zotero

TASK = "verify/report-1"


@pytest.fixture
def library(zotero_db):
    return read_zotero(zotero_db)


@pytest.fixture
def store(tmp_path, library):
    with NoteStore(tmp_path / "factlab" / "notes.sqlite", [library]) as opened:
        yield opened


def _count(store) -> int:
    with sqlite3.connect(store.path) as db:
        return db.execute("SELECT count(*) FROM notes").fetchone()[0]


def test_same_task_and_version_returns_the_existing_note(store, library):
    item = library.items[0]
    first = store.upsert(item, TASK, "2 citations checked.")
    again = store.upsert(item, TASK, "2 citations checked.")
    assert (first.action, again.action) == ("created", "unchanged")
    assert again.note == first.note and _count(store) == 1
    explicit = store.upsert(item, "qa", "body A", version="v1")
    assert store.upsert(item, "qa", "body B (a rerun)", version="v1").note == explicit.note  # a version is written once


def test_a_rerun_in_a_new_process_creates_no_duplicate(tmp_path, library):
    for _ in range(2):
        with NoteStore(tmp_path / "notes.sqlite", [library]) as store:
            store.upsert(library.items[0], TASK, "same result")
    with NoteStore(tmp_path / "notes.sqlite") as store:
        assert len(store.versions(library.items[0], TASK)) == 1


def test_a_new_version_keeps_the_old_one_and_undo_restores_it(store, library):
    item = library.items[0]
    old = store.upsert(item, TASK, "supported").note
    new = store.upsert(item, TASK, "contradicted").note
    assert store.current(item, TASK) == new and [n.body for n in store.versions(item, TASK)] == ["supported",
                                                                                                  "contradicted"]
    restored = store.undo(item, TASK)
    assert restored.note_id == old.note_id and restored.current and restored.body == "supported"
    assert [n.current for n in store.versions(item, TASK)] == [True, False]  # the undone version is kept
    with pytest.raises(KnowledgeError, match="nothing to undo.*one version"):
        store.undo(item, TASK)
    assert store.upsert(item, TASK, "contradicted").action == "restored" and _count(store) == 2


def test_a_new_item_version_is_a_new_note_version(store, library):
    item = library.items[0]
    store.upsert(item, TASK, "ok")
    bumped = ItemRef(item.ref.library_id, item.ref.item_key, item.ref.version + 1)  # the user edited the record
    note = store.upsert(bumped, TASK, "ok").note
    assert note.item.version == 6 and len(store.versions(item, TASK)) == 2
    assert store.undo(item, TASK).item.version == 5


def test_notes_are_per_item_and_task(store, library):
    a, b = library.items[:2]
    store.upsert(a, TASK, "x")
    store.upsert(a, "other-task", "x")
    store.upsert(b, TASK, "x")
    assert [(n.item.item_key, n.task_key) for n in store.notes()] == [
        ("JRNL2345", "other-task"), ("JRNL2345", TASK), ("PRE23456", TASK)]
    assert store.current(library.items[2], TASK) is None
    with pytest.raises(KnowledgeError, match="task_key is empty"):
        store.upsert(a, " ", "x")


def test_only_factlab_tags_are_written(store, library):
    item = library.items[0]
    store.add_tag(item, "factlab/checked")
    for user_tag in ("to-read", "factlab/", "Factlab/x", "/factlab/x"):
        with pytest.raises(KnowledgeError, match="only factlab/\\* tags"):
            store.add_tag(item, user_tag)
    with pytest.raises(KnowledgeError, match="only factlab/\\* tags"):
        store.remove_tag(item, "to-read")
    assert store.tags(item) == ["factlab/checked"]
    store.remove_tag(item, "factlab/checked")
    assert store.tags(item) == []
    with sqlite3.connect(store.path) as db:  # the store has no table for collections, inbox or user notes
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"store_meta", "notes", "note_history", "tags", "acceptances", "sqlite_sequence"}


def test_the_store_never_lives_in_the_users_library(zotero_db, library, tmp_path):
    with pytest.raises(KnowledgeError, match="must not live in the user's library"):
        NoteStore(zotero_db, [library])
    with pytest.raises(KnowledgeError, match="another program's tables"):
        NoteStore(zotero_db)  # even when the library is not passed: it holds Zotero's tables
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "a.txt").write_text("text", encoding="utf-8")
    with pytest.raises(KnowledgeError, match="must not live in the user's library"):
        NoteStore(sources / "notes.sqlite", [read_folder(sources)])
    (tmp_path / "notes.txt").write_text("not a database at all", encoding="utf-8")
    with pytest.raises(KnowledgeError, match="not a factlab note store"):
        NoteStore(tmp_path / "notes.txt")


def test_exports_carry_note_bodies_tags_and_unchanged_metadata(store, library, tmp_path):
    article = library.items[0]
    store.upsert(article, TASK, "first")
    store.upsert(article, TASK, "second")
    store.add_tag(article, "factlab/checked")
    store.add_tag(library.items[2], "factlab/needs-pdf")
    records = json.loads(export_json(store, [library], tmp_path / "notes.json").read_text(encoding="utf-8"))
    assert [(r["item_key"], [n["body"] for n in r["notes"]], r["factlab_tags"]) for r in records] == [
        ("BOOK2345", [], ["factlab/needs-pdf"]), ("JRNL2345", ["second"], ["factlab/checked"])]
    assert records[1]["metadata"]["title"] == article.title and records[1]["version"] == 5
    every = json.loads(export_json(store, [library], tmp_path / "all.json", all_versions=True).read_text("utf-8"))
    assert [n["body"] for n in every[1]["notes"]] == ["first", "second"]
    csl = json.loads(export_csl_json(store, [library], tmp_path / "notes.csl.json").read_text(encoding="utf-8"))
    article_csl = next(r for r in csl if r["id"] == "JRNL2345")
    assert article_csl["note"] == f"[factlab {TASK}]\nsecond" and article_csl["DOI"] == article.doi
    assert article_csl["author"] == [{"family": "Fleming", "given": "Alexander"}]
    assert article_csl["editor"] == [{"family": "Editor", "given": "Ann"}]


def test_export_of_an_item_no_library_holds(store, library, tmp_path):
    store.upsert(ItemRef("zotero:1", "GONE2345", 1), TASK, "orphan")
    records = json.loads(export_json(store, [library], tmp_path / "n.json").read_text(encoding="utf-8"))
    assert records[0]["item_key"] == "GONE2345" and records[0]["metadata"] is None
    with pytest.raises(KnowledgeError, match="GONE2345 has factlab notes but is in none of the libraries"):
        export_csl_json(store, [library], tmp_path / "n.csl.json")
