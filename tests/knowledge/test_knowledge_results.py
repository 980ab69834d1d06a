"""A verify run's cards written back as notes in factlab's own store: import records source_id -> item, one note per
used item and task, unknown sources counted, reruns idempotent, changed cards a new version that undo reverts, the
library unchanged, the notes exported."""

from __future__ import annotations

import doctest
import json
import sqlite3

from knowledge_support import ARTICLE_TITLE, sha256, tree_sha256

import factlab.knowledge.results as results
from factlab.cards.build import build_claim_card, build_paragraph_card, build_report
from factlab.cards.model import write_cards_json
from factlab.knowledge.cli import main
from factlab.knowledge.items import ItemRef
from factlab.knowledge.results import VERIFIED_TAG, load_import, write_notes
from factlab.knowledge.store import NoteStore
from factlab.rules.business import JudgedEvidence
from factlab.schema import Evidence, Judgment

TASK = "verify/penicillin.md"
ARTICLE, PREPRINT = ItemRef("zotero:1", "JRNL2345", 5), ItemRef("zotero:1", "PRE23456", 3)


def _cards(business, folder, source_ids, article_relation="contradict"):
    """cards.json of a two-paragraph report: c1 rests on the article and an unknown blog, c2 on article + preprint."""
    rules = business("default")
    article_id, preprint_id = source_ids
    article = JudgedEvidence(Evidence(article_id, f"{article_id}#p1-c1", "Fleming discovered penicillin in 1928.",
                                      tier=1), Judgment(article_relation, 0.9))
    preprint = JudgedEvidence(Evidence(preprint_id, f"{preprint_id}#p1-c1", "Preprint version.", tier=2),
                              Judgment("support", 0.7))
    blog = JudgedEvidence(Evidence("blog-1", "blog-1#p1-c1", "Fleming found it in 1938.", tier=3),
                          Judgment("support", 0.6))
    text1, text2 = "Fleming discovered penicillin in 1938.", "Penicillin was discovered at St Mary's."
    p1 = build_paragraph_card("p1", 0, len(text1), text1, [
        build_claim_card(claim_id="c1", text=text1, sentence=text1, judged=[article, blog], rules=rules)])
    p2 = build_paragraph_card("p2", len(text1) + 2, len(text1) + 2 + len(text2), text2, [
        build_claim_card(claim_id="c2", text=text2, sentence=text2, judged=[article, preprint], rules=rules)])
    report = build_report(document="reports/penicillin.md", business=rules.name, paragraphs=[p1, p2],
                          created="2025-01-01T00:00:00+00:00")
    folder.mkdir(parents=True, exist_ok=True)
    write_cards_json(report, folder / "cards.json")
    return folder


def _source_ids(imported):
    by_key = {e["item_key"]: e["source_id"] for e in json.loads((imported / "items.json").read_text("utf-8"))}
    return by_key["JRNL2345"], by_key["PRE23456"]


def _rows(store_path) -> int:
    with sqlite3.connect(store_path) as db:
        return db.execute("SELECT count(*) FROM notes").fetchone()[0]


def test_import_maps_source_ids_back_to_items(imported, zotero_db):
    corpus = [json.loads(line)["source_id"] for line in (imported / "corpus.jsonl").read_text("utf-8").splitlines()]
    entries = json.loads((imported / "items.json").read_text("utf-8"))
    assert [e["source_id"] for e in entries] == [*corpus, None]  # the book has no abstract: no source record
    loaded = load_import(imported)
    assert loaded.by_source == dict(zip(corpus, (ARTICLE, PREPRINT), strict=True))
    assert loaded.library.origin == zotero_db.resolve() and loaded.library.get(*ARTICLE.key).title == ARTICLE_TITLE


def test_cards_become_one_note_per_used_item(imported, zotero_db, tmp_path, business, capsys):
    before, tree_before = sha256(zotero_db), tree_sha256(zotero_db.parent)
    run = _cards(business, tmp_path / "verify", _source_ids(imported))
    store_path = tmp_path / "kb" / "notes.sqlite"
    args = ["notes", "--library", str(imported), "--cards", str(run), "--store", str(store_path)]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["task"], summary["notes"], summary["created"], summary["evidence"]) == (TASK, 2, 2, 4)
    assert (summary["evidence_not_in_library"], summary["sources_not_in_library"]) == (1, ["blog-1"])
    with NoteStore(store_path) as store:
        article, preprint = store.current(ARTICLE, TASK), store.current(PREPRINT, TASK)
        assert [c["claim_id"] for c in article.data["claims"]] == ["c1", "c2"]
        assert [c["claim_id"] for c in preprint.data["claims"]] == ["c2"]
        assert "p1/c1 \"Fleming discovered penicillin in 1938.\": label " in article.body
        assert "contradict 0.90" in article.body and "\"Fleming discovered penicillin in 1928.\"" in article.body
        assert "blog-1" not in article.body and store.tags(ARTICLE) == store.tags(PREPRINT) == [VERIFIED_TAG]

    assert main(args) == 0  # the same cards: the same versions, nothing new written
    assert json.loads(capsys.readouterr().out)["unchanged"] == 2 and _rows(store_path) == 2

    first_body = article.body
    _cards(business, run, _source_ids(imported), article_relation="support")  # the judge changed its mind
    changed = write_notes(imported, run / "cards.json", store_path)
    assert {u.note.item.item_key: u.action for u in changed.upserts} == {"JRNL2345": "created",
                                                                         "PRE23456": "created"}
    with NoteStore(store_path) as store:
        assert len(store.versions(ARTICLE, TASK)) == 2 and store.current(ARTICLE, TASK).body != first_body
        assert store.undo(ARTICLE, TASK).body == first_body
        assert len(store.versions(ARTICLE, TASK)) == 2  # undone, not deleted

    out = tmp_path / "notes.json"
    assert main(["export", "--zotero", str(zotero_db), "--store", str(store_path), "--out", str(out)]) == 0
    exported = {r["item_key"]: r for r in json.loads(out.read_text("utf-8"))}
    assert sorted(exported) == ["JRNL2345", "PRE23456"]
    assert exported["JRNL2345"]["notes"][0]["body"] == first_body
    assert exported["PRE23456"]["factlab_tags"] == [VERIFIED_TAG]
    assert sha256(zotero_db) == before and tree_sha256(zotero_db.parent) == tree_before


def test_task_key_option_and_stale_notes(imported, tmp_path, business):
    run = _cards(business, tmp_path / "verify", _source_ids(imported))
    store_path = tmp_path / "kb" / "notes.sqlite"
    assert write_notes(imported, run, store_path, task_key="verify/run-7").task_key == "verify/run-7"
    only_article = _cards(business, tmp_path / "verify2", (_source_ids(imported)[0], "elsewhere-1"))
    result = write_notes(imported, only_article, store_path, task_key="verify/run-7")
    assert [u.note.item for u in result.upserts] == [ARTICLE] and result.stale == [PREPRINT]
    assert result.not_in_library == {"blog-1": 1, "elsewhere-1": 1}


def test_never_written_into_the_library(imported, zotero_db, tmp_path, business, capsys):
    before = sha256(zotero_db)
    run = _cards(business, tmp_path / "verify", _source_ids(imported))
    assert main(["notes", "--library", str(imported), "--cards", str(run), "--store", str(zotero_db)]) == 2
    assert "must not live in the user's library" in capsys.readouterr().err
    assert sha256(zotero_db) == before


def test_bad_inputs_are_named(imported, tmp_path, capsys):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "items.json").write_text("[]", encoding="utf-8")
    cards = tmp_path / "cards.json"
    cards.write_text(json.dumps({"document": "d.md", "paragraphs": [{"paragraph_id": "p1", "claims": [
        {"claim_id": "c1", "text": "t", "evidence": [{"chunk_id": "x"}]}]}]}), encoding="utf-8")
    store = str(tmp_path / "notes.sqlite")
    assert main(["notes", "--library", str(tmp_path / "old"), "--cards", str(cards), "--store", store]) == 2
    assert "library.json: no such file" in capsys.readouterr().err
    assert main(["notes", "--library", str(imported), "--cards", str(cards), "--store", store]) == 2
    assert "paragraphs[0].claims[0].evidence[0].source_id: expected str" in capsys.readouterr().err


def test_results_doctests():
    assert doctest.testmod(results, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE).failed == 0
