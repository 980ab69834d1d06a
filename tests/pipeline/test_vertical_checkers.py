"""The vertical checkers behind one router: an authoritative lookup table, quotations against reference texts, link
validity (HTTP status from a local server), and their answers weighed by the business rules on the claim's card."""

from __future__ import annotations

import http.server
import threading

import pytest
from checker_support import professional
from hydra.utils import instantiate

from factlab.checkers import flow
from factlab.config import compose_config
from factlab.pipeline.trace import ClaimTrace
from factlab.retrieval.verticals import LinkChecker, LookupTable, QuoteMatcher, VerticalRouter


@pytest.fixture()
def phones(tmp_path):
    path = tmp_path / "phones.csv"
    path.write_text("org,phone\n澜州市卫健委,0871-6523 4567\nNorthport City Hall,(555) 010-2000\n", encoding="utf-8")
    return LookupTable("phones", path, "org", "phone", r"\(?\d{3,4}\)?[- ]?\d{3,4}[- ]?\d{4}")


@pytest.mark.parametrize(("claim", "relation"), [
    ("澜州市卫健委的服务热线是0871-65234567。", "support"),   # the same number, other separators
    ("澜州市卫健委的服务热线是0871-65239999。", "contradict"),
    ("Northport City Hall can be reached on 555-010-2000.", "support"),
])
def test_lookup_table_checks_a_stated_value_against_the_row(phones, claim, relation):
    assert phones.applies(claim)
    answer = phones.check(claim, [])
    assert [j.relation for _, j in answer.judged] == [relation]
    assert answer.judged[0][0].tier == 1 and answer.judged[0][0].source_id == "table-phones"


def test_lookup_table_ignores_claims_without_its_keys_and_names_a_bad_file(phones, tmp_path):
    assert not phones.applies("The hotline is 0871-65234567.")
    bad = tmp_path / "bad.csv"
    bad.write_text("name,number\nx,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.csv.*no column"):
        LookupTable("bad", bad, "org", "phone", r"\d+")


def test_quote_matcher_finds_exact_and_near_quotations_in_chinese_too():
    matcher = QuoteMatcher("poems", texts={"静夜思": "床前明月光，疑是地上霜。举头望明月，低头思故乡。"})
    exact = matcher.check("诗中写道「床前明月光，疑是地上霜」。", [])
    near = matcher.check("诗中写道「床前明月光，疑是地上雪」。", [])
    assert [j.relation for _, j in exact.judged] == ["support"]
    assert [j.relation for _, j in near.judged] == ["contradict"] and "“雪”" in near.hints[0]
    assert not matcher.check("诗中写道「今天天气很好啊朋友们」。", []).judged  # nothing close: no answer


def test_lookup_table_reads_international_numbers_and_each_keys_own_value(phones, tmp_path):
    # regressions from the gold (datasets/layers/verticals_gold.jsonl zh-lookup-7, en-lookup-8)
    answer = phones.check("从境外拨打澜州市卫健委热线，请拨+86 871 6523 4567。", [])
    assert [j.relation for _, j in answer.judged] == ["support"]  # the trunk 0 is dropped after +86
    path = tmp_path / "two.csv"
    path.write_text("org,phone\nEastmere Library,(415) 555-0150\nGreyfield Hospital,415-555-0118\n", encoding="utf-8")
    two = LookupTable("phones", path, "org", "phone", r"\(?\d{3,4}\)?[- ]?\d{3,4}[- ]?\d{4}")
    swapped = two.check("Eastmere Library's desk is (415) 555-0118 and Greyfield Hospital's is (415) 555-0150.", [])
    assert [j.relation for _, j in swapped.judged] == ["contradict", "contradict"]
    assert swapped.hints[0] == "the table lists Eastmere Library as (415) 555-0150, the claim says 4155550118"
    right = two.check("Eastmere Library's desk is (415) 555-0150 and Greyfield Hospital's is (415) 555-0118.", [])
    assert [j.relation for _, j in right.judged] == ["support", "support"]
    assert [j.relation for _, j in two.check("(415) 555-0150 rings at Eastmere Library.", []).judged] == ["support"]


def test_quote_matcher_ignores_line_breaks_punctuation_width_and_case_but_not_words():
    # regressions from the gold (zh-quote-6, zh-quote-7, en-quote-4, en-quote-5)
    matcher = QuoteMatcher("refs", texts={"静夜思": "静夜思\n\n床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n",
                                          "sonnet": "Shall I compare thee to a summer's day?\n"
                                                    "Thou art more lovely and more temperate:\n"})
    for claim in ("诗中「疑是地上霜。举头望明月」两句。", "前两句是「床前明月光,疑是地上霜」。",
                  'He said "shall I compare thee to a summer\'s day" twice.',
                  'It goes on "a summer\'s day? Thou art more lovely".'):
        answer = matcher.check(claim, [])
        assert [j.relation for _, j in answer.judged] == ["support"], claim
    assert matcher.check("诗中「疑是地上霜。举头望明月」两句。", []).judged[0][0].text == "疑是地上霜。\n举头望明月"
    near = matcher.check("前两句是「床前明月光,疑是地上雪」。", [])
    assert [j.relation for _, j in near.judged] == ["contradict"]
    assert near.hints == ["quotation differs from 静夜思: “雪” where the reference has “霜”"]  # not the comma


def test_link_checker_ends_a_link_at_chinese_text_and_full_width_punctuation():
    # regressions from the gold (zh-link-1, zh-link-2)
    sources = [{"url": "https://bus.qinglan.example/report/2023"}, {"url": "https://wiki.example/静夜思"}]
    checker = LinkChecker()
    for claim in ("详见https://bus.qinglan.example/report/2023，其中列出了全年客运量。",
                  "报告已发布（https://bus.qinglan.example/report/2023）。",
                  "见https://wiki.example/静夜思一文。"):  # a source's link with Chinese in its path: read whole
        assert checker.check(claim, sources).hints == [], claim
    assert checker.check("原文见https://bus.qinglan.example/report/2022。", sources).hints == [
        "link https://bus.qinglan.example/report/2022 is not among the sources: check it points where the claim says"]


@pytest.fixture()
def site():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 (http.server's name)
            self.send_response(200 if self.path == "/ok" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_link_checker_asks_the_status_only_when_the_network_is_allowed(site):
    claim = f"The report is at {site}/ok and the data at {site}/gone."
    offline = LinkChecker(network=False).check(claim, [{"url": f"{site}/ok"}])
    assert offline.hints == [f"link {site}/gone is not among the sources: check it points where the claim says"]
    assert not offline.review
    online = LinkChecker(network=True, timeout_s=5).check(claim, [{"url": f"{site}/ok"}, {"url": f"{site}/gone"}])
    assert online.hints == [f"link {site}/gone does not answer (404): replace it"] and online.review


def test_the_router_answers_with_the_first_checker_that_applies_and_the_rules_weigh_it(phones, default_rules,
                                                                                      hashing_retriever):
    router = VerticalRouter([LinkChecker(), phones])
    pipeline = professional({}, hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}]), default_rules,
                            verticals=router)
    trace = ClaimTrace("c1", "澜州市卫健委的服务热线是0871-65239999。", "澜州市卫健委的服务热线是0871-65239999。",
                       vertical="general")
    card = flow.decide(pipeline.parts, trace)
    assert card.label == "wrong" and card.evidence[0].source_id == "table-phones"
    assert card.hints[0].startswith("phones: the table lists 澜州市卫健委 as 0871-6523 4567")
    assert router.check("No link and no key here.", []) is None


def test_the_default_verticals_config_builds_the_offline_link_checker():
    router = instantiate(compose_config("verify", ["input=x", "sources=y"]).verticals)
    assert [type(c).__name__ for c in router.checkers] == ["LinkChecker"] and not router.checkers[0].network
