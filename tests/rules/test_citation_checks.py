"""Citation extraction and the two citation checks: identity exists, content supports."""

from types import SimpleNamespace

import pytest

from factlab.matching.citations import find_citations
from factlab.rules.business import JudgedEvidence
from factlab.rules.citations import CitationCheck, check_citation, check_claim_citations
from factlab.schema import Evidence, Judgment

# (text, [(kind, verbatim mention, authors, year, doi)])
FIND_CASES = [
    ("Smith et al. (2019) found a 20% drop.", [("author_year", "Smith et al. (2019)", ["Smith"], 2019, "")]),
    ("A 20% drop was found (Lee, 2017).", [("author_year", "Lee, 2017", ["Lee"], 2017, "")]),
    ("Smith and Lee (2019a) disagree.", [("author_year", "Smith and Lee (2019a)", ["Smith", "Lee"], 2019, "")]),
    ("Smith & Lee (2019) disagree.", [("author_year", "Smith & Lee (2019)", ["Smith", "Lee"], 2019, "")]),
    ("(Smith et al., 2019; Wang, 2020)",
     [("author_year", "Smith et al., 2019", ["Smith"], 2019, ""), ("author_year", "Wang, 2020", ["Wang"], 2020, "")]),
    ("van der Berg et al. (2018) measured it.",
     [("author_year", "van der Berg et al. (2018)", ["van der Berg"], 2018, "")]),
    ("See doi:10.1038/s41586-020-2012-7.",
     [("doi", "10.1038/s41586-020-2012-7", [], None, "10.1038/s41586-020-2012-7")]),
    ("https://doi.org/10.1000/ABC(12)x) here", [("doi", "10.1000/ABC(12)x", [], None, "10.1000/abc(12)x")]),
    ("张三等（2020）指出疫苗有效。", [("author_year", "张三等（2020）", ["张三"], 2020, "")]),
    ("王小明和李四(2021年)发现", [("author_year", "王小明和李四(2021年)", ["王小明", "李四"], 2021, "")]),
    ("疫苗有效（张三等，2020）。", [("author_year", "张三等，2020", ["张三"], 2020, "")]),
    ("据《柳叶刀》报道", [("title", "《柳叶刀》", [], None, "")]),
    ("Mortality fell (p < 0.05, n = 2019).", []),
    ("In 2019 (the year of the outbreak) cases rose.", []),
    ("COVID-19 (2019) spread.", []),
    ("", []),
]


@pytest.mark.parametrize("text, expected", FIND_CASES, ids=[c[0][:30] or "empty" for c in FIND_CASES])
def test_find_citations(text, expected):
    got = [(m.kind, m.text, m.authors, m.year, m.doi) for m in find_citations(text)]
    assert got == expected
    for mention in find_citations(text):
        assert text[mention.start:mention.end] == mention.text


SOURCES = [
    {"source_id": "smith-2019", "title": "Aspirin and stroke prevention", "author": "Smith, J.; Lee, K.",
     "year": 2019, "doi": "10.1000/asp.2019"},
    {"source_id": "lee-2017", "title": "Statins in the elderly", "author": "Kim Lee", "year": 2017},
    {"source_id": "zhang-2020", "title": "新冠疫苗有效性研究", "author": "张三, 李四", "year": 2020},
    {"source_id": "who-2020", "title": "Global tuberculosis report 2020", "author": "World Health Organization",
     "year": 2020},
    {"source_id": "noyear", "title": "Undated note", "author": "Brown"},
]


def judged(source_id, relation):
    return JudgedEvidence(Evidence(source_id, f"{source_id}#p1-c1", "snippet", tier=1), Judgment(relation, 0.9))


JUDGED = [judged("smith-2019", "support"), judged("lee-2017", "contradict"), judged("zhang-2020", "support")]

# (cited, identity_exists, content_supports, matched_source_id)
CHECK_CASES = [
    ("Smith et al. (2019)", True, True, "smith-2019"),
    ("Smith (2019)", True, True, "smith-2019"),
    ("Smith and Lee (2019)", True, True, "smith-2019"),
    ("Smith et al. (2018)", False, False, None),  # wrong year: a spliced citation
    ("Lee et al. (2019)", False, False, None),  # Lee is the second author, not the first
    ("Smith and Wang (2019)", False, False, None),  # Wang is no author of it
    ("(Lee, 2017)", True, False, "lee-2017"),  # exists, but its snippet contradicts
    ("doi:10.1000/ASP.2019", True, True, "smith-2019"),
    ("https://doi.org/10.9999/none", False, False, None),
    ("张三等（2020）", True, True, "zhang-2020"),
    ("（张三，2020）", True, True, "zhang-2020"),
    ("李四等（2020）", False, False, None),
    ("研究表明张三等（2020）", True, True, "zhang-2020"),
    ("《新冠疫苗有效性研究》", True, True, "zhang-2020"),
    ("Global tuberculosis report 2020", True, False, "who-2020"),  # bare title; no snippet of it was judged
    ("global  Tuberculosis Report, 2020", True, False, "who-2020"),
    ("An unknown title", False, False, None),
    ("Brown (2021)", False, False, None),  # source has no year: identity cannot be confirmed
]


@pytest.mark.parametrize("cited, identity, content, matched", CHECK_CASES, ids=[c[0] for c in CHECK_CASES])
def test_check_citation(cited, identity, content, matched):
    check = check_citation(cited, SOURCES, JUDGED)
    assert (check.identity_exists, check.content_supports, check.matched_source_id) == (identity, content, matched)
    assert check.cited == cited
    assert check.reason


def test_content_support_must_come_from_the_cited_source():
    """Support from another source does not make the citation's content support the claim."""
    check = check_citation("Smith et al. (2019)", SOURCES, [judged("lee-2017", "support")])
    assert (check.identity_exists, check.content_supports) == (True, False)


def test_partial_support_is_not_content_support():
    check = check_citation("Smith et al. (2019)", SOURCES, [judged("smith-2019", "partial_support")])
    assert check.content_supports is False


def test_sources_as_objects():
    sources = [SimpleNamespace(**s) for s in SOURCES if "doi" in s]
    assert check_citation("Smith et al. (2019)", sources, JUDGED).matched_source_id == "smith-2019"


def test_check_claim_citations_checks_each_mention():
    checks = check_claim_citations("Smith et al. (2019) and (Lee, 2017) both say so.", SOURCES, JUDGED)
    assert [(c.matched_source_id, c.content_supports) for c in checks] == [("smith-2019", True), ("lee-2017", False)]


def test_citation_check_round_trip():
    check = check_citation("(Lee, 2017)", SOURCES, JUDGED)
    assert CitationCheck.from_dict(check.to_dict()) == check
    with pytest.raises(ValueError, match="unknown field"):
        CitationCheck.from_dict({**check.to_dict(), "bogus": 1})


def test_parenthetical_without_brackets_is_read_as_author_year():
    assert check_citation("Lee, 2017", SOURCES, JUDGED).matched_source_id == "lee-2017"
