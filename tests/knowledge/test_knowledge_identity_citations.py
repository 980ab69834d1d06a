"""Duplicate suggestions (DOI is never identity) and citation checks that keep "exists" apart from "supports"."""

from __future__ import annotations

import pytest

from factlab.knowledge.citations import check_citation, record_checks, resolve_citation
from factlab.knowledge.identity import is_preprint, suggest_duplicates
from factlab.knowledge.items import Creator, Item, ItemRef, KnowledgeError
from factlab.knowledge.store import NoteStore
from factlab.knowledge.zotero import read_zotero

TITLE = "Attention Is All You Need"


def _item(key: str, title: str = TITLE, family: str = "Vaswani", year: int | None = 2017, doi: str = "",
          venue: str = "", item_type: str = "journalArticle", library: str = "zotero:1") -> Item:
    return Item(ItemRef(library, key, 1), item_type, title, (Creator(family, "Ashish"),) if family else (), year,
                doi, venue)


@pytest.fixture
def library(zotero_db):
    return read_zotero(zotero_db)


def test_a_preprint_and_its_journal_version_are_suggested_not_merged(library):
    [pair] = suggest_duplicates(library)
    assert (pair.a.item_key, pair.b.item_key) == ("JRNL2345", "PRE23456")
    assert pair.reasons == ("same title", "same first author", "years 2021 and 2020", "preprint and journal version")
    assert len(library) == 3  # nothing merged: both stay items with their own identity


def test_arxiv_doi_vs_journal_doi_with_a_slightly_different_title():
    preprint = _item("P", "Attention is all you need", doi="10.48550/arXiv.1706.03762", year=2017,
                     item_type="preprint")
    journal = _item("J", "Attention is all you need.", doi="10.5555/3295222.3295349", year=2018,
                    venue="Advances in Neural Information Processing Systems")
    assert is_preprint(preprint) and not is_preprint(journal)
    [pair] = suggest_duplicates([preprint, journal])
    assert "preprint and journal version" in pair.reasons and pair.score == 1.0


def test_same_doi_on_two_records_is_suggested_across_libraries():
    a = _item("A", "Deep residual learning", family="He", doi="https://doi.org/10.1109/CVPR.2016.90")
    b = _item("smith2020", "Deep Residual Learning for Image Recognition", family="He", doi="10.1109/cvpr.2016.90",
              library="bibtex:refs")
    [pair] = suggest_duplicates([a, b])
    assert "same DOI" in pair.reasons and {pair.a.library_id, pair.b.library_id} == {"zotero:1", "bibtex:refs"}


def test_same_arxiv_id_in_doi_and_eprint_field():
    a = _item("A", doi="10.48550/arXiv.1706.03762v5", item_type="preprint")
    b = Item(ItemRef("bibtex:refs", "vaswani", "x"), "misc", "Transformers", (Creator("Other"),), 2019,
             extra=(("eprint", "1706.03762"), ("archiveprefix", "arXiv")))
    [pair] = suggest_duplicates([a, b])
    assert pair.reasons[0] == "same arXiv id 1706.03762"


@pytest.mark.parametrize("other, why", [
    (_item("B", family="Shazeer"), "another first author"),
    (_item("B", year=2012), "years too far apart"),
    (_item("B", "Attention is not all you need: pure attention loses rank"), "another title"),
    (_item("B", family=""), "no author on one side and the title is only similar"),
])
def test_no_suggestion_when_the_records_differ(other, why):
    base = _item("A", TITLE + ".") if "only similar" not in why else _item("A", TITLE + " today")
    assert suggest_duplicates([base, other]) == [], why


def test_resolve_by_key_doi_arxiv_and_title(library):
    assert resolve_citation(library, "[@JRNL2345]").matched_by == "key"
    by_doi = resolve_citation(library, "https://doi.org/10.1016/J.HIST.2021.01.002")
    assert (by_doi.item.ref.item_key, by_doi.matched_by) == ("JRNL2345", "doi")
    assert resolve_citation(library, "arXiv:2011.01234").item.ref.item_key == "PRE23456"
    by_title = resolve_citation(library, "the mould in dr florey's coat")
    assert (by_title.item.ref.item_key, by_title.matched_by) == ("BOOK2345", "title")
    ambiguous = resolve_citation(library, "Penicillin discovery revisited - a historical analysis")
    assert ambiguous.item.ref.item_key == "JRNL2345" and [r.item_key for r in ambiguous.candidates] == ["PRE23456"]
    assert resolve_citation(library, "10.9999/unknown").item is None
    with pytest.raises(KnowledgeError, match="empty"):
        resolve_citation(library, "[@]")


# (citation, item key, matched_by): the checker's citation model (factlab.matching.citations) applied to the library
RESOLVE_CASES = [
    ("Fleming (2021)", "JRNL2345", "author_year"),
    ("Fleming et al. (2020)", "PRE23456", "author_year"),  # the preprint's year; et al. names nobody
    ("Fleming (2019)", None, None),  # the year must be the same: no tolerance
    ("Fleming and Editor (2021)", None, None),  # Ann Editor is the article's editor, not one of its authors
    ("(Lax, 2004)", "BOOK2345", "author_year"),
    ("Lax, 2004", "BOOK2345", "author_year"),
    ("Eric Lax (2004)", "BOOK2345", "author_year"),
    ("The Mould in Dr Florey's Coat (2004)", None, None),  # read as author "Coat" + 2004, as the rules read it
    ("Penicillin discovery revisited", "JRNL2345", "title"),  # contained in the title (6+ characters)
    ("Penicillin discovery revisited: an historical analysis", None, None),  # a changed word is another title
    ("doi:10.1016/j.hist.2021.01.002).", "JRNL2345", "doi"),  # trailing punctuation is not part of a DOI
    ("10.48550/arXiv.2011.01234", "PRE23456", "doi"),
    ("arXiv:2011.01234v2", "PRE23456", "arxiv"),
]


@pytest.mark.parametrize("citation, key, how", RESOLVE_CASES, ids=[c[0] for c in RESOLVE_CASES])
def test_resolution_follows_the_checkers_citation_model(library, citation, key, how):
    found = resolve_citation(library, citation)
    assert (found.item.ref.item_key if found.item else None, found.matched_by) == (key, how)


def test_a_chinese_author_year_citation_resolves_to_a_chinese_item():
    item = Item(ItemRef("csl:zh", "zhang2020", 1), "article-journal", "新冠疫苗有效性研究", (Creator("张", "三"),),
                2020)
    assert item.authors[0].name == "张三"  # family name first, as the citation is written
    for citation in ("张三等（2020）", "（张三，2020）", "研究表明张三等（2020）", "《新冠疫苗有效性研究》"):
        assert resolve_citation([item], citation).item == item, citation
    assert resolve_citation([item], "李四等（2020）").item is None


def test_exists_and_supports_are_two_states(library):
    found_contradicted = check_citation(library, "Fleming found it in 1938.", "JRNL2345", "refutes")
    assert (found_contradicted.exists, found_contradicted.supports, found_contradicted.status) == (
        True, False, "contradicted")
    found_unjudged = check_citation(library, "Fleming found it.", "JRNL2345")
    assert (found_unjudged.exists, found_unjudged.supports, found_unjudged.status) == (True, None, "unjudged")
    missing_supported = check_citation(library, "It works.", "[@nobody2020]", "support")
    assert (missing_supported.exists, missing_supported.supports, missing_supported.status) == (
        False, False, "missing")  # as in the checker's rules: a source that is not there supports nothing
    assert missing_supported.relation == "support"  # the checker's relation is kept as it came
    with pytest.raises(KnowledgeError, match="nobody2020.*unknown relation"):
        check_citation(library, "x", "[@nobody2020]", "maybe")


def test_checks_become_one_note_per_cited_item_and_reruns_are_idempotent(library, tmp_path):
    checks = [check_citation(library, "Fleming found it in 1938.", "JRNL2345", "contradict"),
              check_citation(library, "It was in London.", "10.1016/j.hist.2021.01.002", "support"),
              check_citation(library, "It works.", "[@nobody2020]", "support")]
    with NoteStore(tmp_path / "notes.sqlite", [library]) as store:
        upserts, missing = record_checks(store, "verify/r1", checks)
        rerun, _ = record_checks(store, "verify/r1", checks)
        [note] = store.notes()
        tags = store.tags(note.item)
    assert [u.action for u in upserts] == ["created"] and [u.action for u in rerun] == ["unchanged"]
    assert [m.citation for m in missing] == ["[@nobody2020]"]
    assert note.item == library.get("zotero:1", "JRNL2345").ref and "2 sentences cite this item" in note.body
    assert [c["status"] for c in note.data["checks"]] == ["contradicted", "supported"]
    assert tags == ["factlab/checked"]
