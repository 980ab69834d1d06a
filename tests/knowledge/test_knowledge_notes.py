"""factlab's notes from a verify run, and the loop guard: a note factlab wrote never comes back as evidence (a source
record) unless a person accepted that very version."""

from __future__ import annotations

import json

import pytest

from factlab.cards.build import build_claim_card, build_paragraph_card, build_report
from factlab.data.cases import validate_source
from factlab.knowledge.cli import main
from factlab.knowledge.csljson import read_csl_json
from factlab.knowledge.export import export_csl_json
from factlab.knowledge.items import ItemRef, KnowledgeError
from factlab.knowledge.results import VERIFIED_TAG, load_import, write_card_notes
from factlab.knowledge.sources import to_source_records
from factlab.knowledge.store import NoteStore
from factlab.knowledge.zotero import read_zotero
from factlab.rules.business import JudgedEvidence
from factlab.schema import Evidence, Judgment

TASK = "verify/demo.md"
ARTICLE = ItemRef("zotero:1", "JRNL2345", 5)
CREATED = "2026-12-01T10:00:00+00:00"


def _article_source(imported) -> str:
    return next(e["source_id"] for e in json.loads((imported / "items.json").read_text("utf-8"))
                if e["item_key"] == "JRNL2345")


def _report(source_id: str, label: str = "wrong", created: str = CREATED) -> dict:
    """A small cards.json object: one claim resting on the article, one on a web page outside the library."""
    evidence = {"source_id": source_id, "chunk_id": f"{source_id}#p1-c1", "snippet": "Fleming found it in 1928.",
                "relation": "contradict", "confidence": 0.9}
    web = {"source_id": "web-1", "chunk_id": "web-1#p1-c1", "snippet": "In 1938.", "relation": "support",
           "confidence": 0.5}
    return {"document": "reports/demo.md", "created": created, "paragraphs": [{"paragraph_id": "p1", "claims": [
        {"claim_id": "c1", "text": "Fleming found penicillin in 1938.", "label": label, "relation": "contradict",
         "confidence": 0.9, "risk_level": "red", "depends_on": [source_id], "evidence": [evidence, web]}]}]}


def test_a_small_report_becomes_a_note_that_says_factlab_wrote_it(imported, tmp_path):
    result = write_card_notes(_report(_article_source(imported)), tmp_path / "notes.sqlite", imported, run="run-7")
    assert (result.task_key, [u.action for u in result.upserts], result.not_in_library) == (TASK, ["created"],
                                                                                          {"web-1": 1})
    with NoteStore(tmp_path / "notes.sqlite") as store:
        note = store.current(ARTICLE, TASK)
        assert store.tags(ARTICLE) == [VERIFIED_TAG]
    assert note.body.splitlines()[0] == (f"Written by factlab for {TASK} (run run-7, report of {CREATED}); not "
                                         "evidence until accepted.")
    assert (note.written_by, note.accepted, note.accepted_by) == ("factlab", False, "")
    assert {k: note.data[k] for k in ("written_by", "task", "run", "created")} == {
        "written_by": "factlab", "task": TASK, "run": "run-7", "created": CREATED}
    [claim] = note.data["claims"]
    assert (claim["claim_id"], claim["label"], claim["source_id"], claim["decisive"]) == (
        "c1", "wrong", _article_source(imported), True)
    assert [e["chunk_id"] for e in claim["evidence"]] == [f"{_article_source(imported)}#p1-c1"]
    assert "label wrong" in note.body and f"[{_article_source(imported)}#p1-c1]" in note.body


def test_a_rerun_that_finds_the_same_is_the_same_note(imported, tmp_path):
    store_path = tmp_path / "notes.sqlite"
    first = write_card_notes(_report(_article_source(imported)), store_path, imported, run="run-7")
    again = write_card_notes(_report(_article_source(imported), created="2026-12-02T09:00:00+00:00"), store_path,
                             imported, run="run-8")
    assert [u.action for u in again.upserts] == ["unchanged"] and again.upserts[0].note == first.upserts[0].note
    changed = write_card_notes(_report(_article_source(imported), label="right"), store_path, imported, run="run-9")
    assert [u.action for u in changed.upserts] == ["created"] and "run run-9" in changed.upserts[0].note.body


def test_a_report_object_and_an_open_store_are_accepted(imported, tmp_path, business):
    source_id = _article_source(imported)
    judged = JudgedEvidence(Evidence(source_id, f"{source_id}#p1-c1", "Fleming found it in 1928.", tier=1),
                            Judgment("contradict", 0.9))
    text = "Fleming found penicillin in 1938."
    card = build_claim_card(claim_id="c1", text=text, sentence=text, judged=[judged], rules=business("default"))
    report = build_report(document="reports/demo.md", business="default", created=CREATED,
                          paragraphs=[build_paragraph_card("p1", 0, len(text), text, [card])])
    library = load_import(imported)
    with NoteStore(tmp_path / "notes.sqlite", [library.library]) as store:
        result = write_card_notes(report, store, library, task_key="verify/run-1")
        assert [u.note.item for u in result.upserts] == [ARTICLE]
        assert store.current(ARTICLE, "verify/run-1").data["claims"][0]["label"] == card.label


def test_factlab_notes_are_no_sources_until_a_person_accepts_them(imported, zotero_db, tmp_path):
    store_path = tmp_path / "notes.sqlite"
    write_card_notes(_report(_article_source(imported)), store_path, imported, run="run-7")
    library = read_zotero(zotero_db)
    with NoteStore(store_path, [library]) as store:
        withheld = to_source_records(library, notes=store)
        assert withheld.note_refs == {} and withheld.withheld_notes == [(ARTICLE, TASK)]
        assert not any("Written by factlab" in r.get("text", "") for r in withheld.records)
        assert to_source_records(library).records == withheld.records  # no store, no note: the same records

        with pytest.raises(KnowledgeError, match="accepted by a person, got 'factlab'"):
            store.accept(ARTICLE, TASK, "factlab")  # factlab cannot vouch for itself
        accepted = store.accept(ARTICLE, TASK, "Ann Lee")
        assert (accepted.accepted, accepted.accepted_by) == (True, "Ann Lee")
        export = to_source_records(library, notes=store)
        [(source_id, ref)] = export.note_refs.items()
        record = next(r for r in export.records if r["source_id"] == source_id)
        assert ref == ARTICLE and source_id.endswith(f"-note-{accepted.note_id}") and not export.withheld_notes
        assert record["text"] == accepted.body and "accepted by Ann Lee" in record["title"]
        validate_source(record, "accepted note")  # an ordinary source record for the retriever

    # factlab writes a new finding: the new version is not accepted, so it is withheld again
    write_card_notes(_report(_article_source(imported), label="right"), store_path, imported, run="run-8")
    with NoteStore(store_path, [library]) as store:
        again = to_source_records(library, notes=store)
        assert again.note_refs == {} and again.withheld_notes == [(ARTICLE, TASK)]
        with pytest.raises(KnowledgeError, match="no note of task 'verify/other'"):
            store.accept(ARTICLE, "verify/other", "Ann Lee")


def test_accept_on_the_command_line_then_import_with_notes(imported, zotero_db, tmp_path, capsys):
    store_path = tmp_path / "notes.sqlite"
    write_card_notes(_report(_article_source(imported)), store_path, imported, run="run-7")
    out = tmp_path / "kb2"

    def corpus_notes() -> list[dict]:
        lines = (out / "corpus.jsonl").read_text("utf-8").splitlines()
        return [r for r in map(json.loads, lines) if "-note-" in r["source_id"]]

    assert main(["import", "--zotero", str(zotero_db), "--notes", str(store_path), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["notes_as_sources"], summary["notes_withheld"], corpus_notes()) == (0, 1, [])

    accept = ["accept", "--store", str(store_path), "--library-id", "zotero:1", "--item-key", "JRNL2345",
              "--task", TASK]
    assert main([*accept, "--by", "factlab"]) == 2 and "accepted by a person" in capsys.readouterr().err
    assert main([*accept, "--by", "Ann Lee"]) == 0
    assert json.loads(capsys.readouterr().out)["accepted_by"] == "Ann Lee"
    assert main(["import", "--zotero", str(zotero_db), "--notes", str(store_path), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["notes_as_sources"], summary["notes_withheld"]) == (1, 0)
    assert [r["title"] for r in corpus_notes()] == [
        f"factlab note on Penicillin Discovery Revisited: A Historical Analysis ({TASK}), accepted by Ann Lee"]
    assert main(["import", "--zotero", str(zotero_db), "--notes", str(tmp_path / "none.sqlite"), "--out",
                 str(out)]) == 2 and "no note store there" in capsys.readouterr().err


def test_a_note_exported_into_the_users_library_does_not_come_back_as_a_source(imported, zotero_db, tmp_path):
    """The CSL-JSON export carries the note bodies in `note`; read back as a library, that is no source text."""
    store_path = tmp_path / "notes.sqlite"
    write_card_notes(_report(_article_source(imported)), store_path, imported, run="run-7")
    library = read_zotero(zotero_db)
    with NoteStore(store_path, [library]) as store:
        body = store.current(ARTICLE, TASK).body
        export_csl_json(store, [library], tmp_path / "export" / "notes.csl.json")
    again = read_csl_json(tmp_path / "export" / "notes.csl.json")
    records = to_source_records(again).records
    assert records and not any(body in json.dumps(r, ensure_ascii=False) or "Written by factlab" in
                               json.dumps(r, ensure_ascii=False) for r in records)
