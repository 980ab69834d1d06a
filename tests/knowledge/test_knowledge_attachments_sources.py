"""Attachments need a per-task grant; imported items become valid source records the retriever reads."""

from __future__ import annotations

import pytest
from knowledge_support import ABSTRACT, PDF_TEXT

from factlab.data.cases import validate_source
from factlab.knowledge.attachments import AttachmentGrant, AttachmentNotAuthorised, read_attachment
from factlab.knowledge.folder import read_folder
from factlab.knowledge.sources import source_id_for, to_source_records, write_corpus
from factlab.knowledge.zotero import read_zotero
from factlab.retrieval.readers import read_jsonl


@pytest.fixture
def library(zotero_db):
    return read_zotero(zotero_db)


def test_reading_an_attachment_without_a_grant_is_refused_naming_the_item(library):
    article = library.get("zotero:1", "JRNL2345")
    with pytest.raises(AttachmentNotAuthorised, match="zotero:1/JRNL2345.*Penicillin Discovery.*AttachmentGrant"):
        read_attachment(article, article.attachments[0], None)
    other_item = AttachmentGrant("verify/run1", "zotero:1", frozenset({"BOOK2345"}))
    with pytest.raises(AttachmentNotAuthorised, match="task 'verify/run1'.*does not cover item zotero:1/JRNL2345"):
        read_attachment(article, article.attachments[0], other_item)
    other_library = AttachmentGrant.every_item("verify/run1", "bibtex:refs")
    with pytest.raises(AttachmentNotAuthorised):
        read_attachment(article, article.attachments[0], other_library)


def test_reading_with_a_grant(library):
    article, book = library.get("zotero:1", "JRNL2345"), library.get("zotero:1", "BOOK2345")
    grant = AttachmentGrant("verify/run1", "zotero:1", frozenset({"JRNL2345", "BOOK2345"}))
    assert read_attachment(article, article.attachments[0], grant) == [PDF_TEXT]
    assert read_attachment(book, book.attachments[0], grant) == ["Florey and Chain purified penicillin."]


def test_source_records_use_the_abstract_without_a_grant_and_the_attachment_with_one(library):
    plain = to_source_records(library)
    assert [r["text"] for r in plain.records] == [ABSTRACT, "Preprint version."]
    assert plain.skipped == [(library.get("zotero:1", "BOOK2345").ref, "no abstract (its attachments need a grant)")]
    granted = to_source_records(library, AttachmentGrant.every_item("verify/run1", "zotero:1"))
    by_key = {granted.refs[r["source_id"]].item_key: r for r in granted.records}
    assert by_key["JRNL2345"]["text"] == PDF_TEXT
    assert by_key["BOOK2345"]["text"] == "Florey and Chain purified penicillin."
    assert by_key["PRE23456"]["text"] == "Preprint version."  # no attachment: the abstract
    record = by_key["JRNL2345"]
    assert (record["author"], record["year"], record["doi"], record["lang"]) == (
        "Alexander Fleming", 2021, "10.1016/j.hist.2021.01.002", "en")
    for row in granted.records:
        validate_source(row, "knowledge export")  # the case schema's own check of a source record


def test_source_ids_are_stable_and_unique_across_libraries(library):
    ref = library.items[0].ref
    assert source_id_for(ref) == to_source_records(library).records[0]["source_id"]
    same_key_elsewhere = type(ref)("bibtex:refs", ref.item_key, "abc")
    assert source_id_for(same_key_elsewhere) != source_id_for(ref)


def test_the_corpus_file_is_read_by_the_retriever(library, tmp_path):
    path = write_corpus(to_source_records(library), tmp_path / "sources" / "corpus.jsonl")
    documents, problems = read_jsonl(path)
    assert not problems and [d.meta["title"] for d in documents][0] == library.items[0].title


def test_a_folder_library_keys_by_relative_path_and_reads_files_only_with_a_grant(tmp_path):
    folder = tmp_path / "sources"
    (folder / "reports").mkdir(parents=True)
    (folder / "reports" / "who.md").write_text("# WHO\nPenicillin is an antibiotic.", encoding="utf-8")
    (folder / "notes.txt").write_text("Fleming 1928.", encoding="utf-8")
    (folder / "notes.txt.meta.json").write_text('{"title": "Lab notes", "year": 1929}', encoding="utf-8")
    (folder / ".hidden.txt").write_text("skip me", encoding="utf-8")
    (folder / "data.csv").write_text("a,b", encoding="utf-8")
    library = read_folder(folder, library_id="folder:sources")
    assert [(i.title, i.year, i.extra) for i in library] == [("Lab notes", 1929, (("path", "notes.txt"),)),
                                                             ("who", None, (("path", "reports/who.md"),))]
    assert any("data.csv" in p and ".csv files are not read" in p for p in library.problems)
    moved = tmp_path / "elsewhere"
    folder.rename(moved)
    assert [i.ref.item_key for i in read_folder(moved, "folder:sources")] == [i.ref.item_key for i in library]
    assert to_source_records(library).skipped[0][1] == "no abstract (its attachments need a grant)"
    library = read_folder(moved, "folder:sources")
    texts = [r["text"] for r in to_source_records(library, AttachmentGrant.every_item("t", "folder:sources")).records]
    assert texts == ["Fleming 1928.", "# WHO\nPenicillin is an antibiotic."]
    version = library.items[0].ref.version
    (moved / "notes.txt").write_text("Fleming 1928, revised.", encoding="utf-8")
    assert read_folder(moved, "folder:sources").items[0].ref.version != version
