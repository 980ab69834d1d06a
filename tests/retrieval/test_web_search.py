"""The web searcher against real HTTP servers on the loopback: a SearxNG-shaped JSON endpoint on 127.0.0.1 and
"sites" on 127.0.0.2 (tier 1 in the test's table) and 127.0.0.3 (tier 2), with dated pages, a redirect, a 404 and a
slow page. Tier by tier site queries, relaxation, corroboration vs syndication, the egress log, the disk cache (a
rerun sends nothing), failures as skipped sources; and the Brave parser on Brave's own published sample answer."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from factlab.retrieval.tiers import TierTables
from factlab.retrieval.web.fetch import PageFetcher
from factlab.retrieval.web.search import BraveSearch, MissingSearchKeyError, SearchBackendError, SearxNG
from factlab.retrieval.web.searcher import WebSearcher

DATA = Path(__file__).parent / "data"
TIER1, TIER2, ENGINE = "127.0.0.2", "127.0.0.3", "127.0.0.1"


def page(title: str, body: str, published: str = "", canonical: str = "") -> bytes:
    meta = f'<meta property="article:published_time" content="{published}">' if published else ""
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return (f"<html><head><title>{title}</title>{meta}{link}</head><body><article><h1>{title}</h1>"
            f"<p>{body}</p></article></body></html>").encode()


PENICILLIN = ("Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital in London, when mould "
              "killed the bacteria on a culture plate he had left out.")
SALT = "Low-sodium salt substitutes lowered systolic blood pressure by 5.4 mmHg in the trial of 20,995 adults."


class _Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, pages: dict[str, tuple[int, bytes, dict]]):
        self.pages = pages
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        super().__init__((host, 0), _Handler)

    def url(self, path: str) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}{path}"

    def handle_error(self, request, client_address) -> None:
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        split = urlsplit(self.path)
        with self.server.lock:
            self.server.hits[split.path] += 1
        if split.path == "/search":  # the SearxNG-shaped endpoint
            status, body, headers = 200, json.dumps(self.server.answer(parse_qs(split.query))).encode(), {
                "Content-Type": "application/json"}
        else:
            status, body, headers = self.server.pages.get(split.path, (404, b"not found", {}))
        if headers.get("X-Sleep"):
            time.sleep(float(headers["X-Sleep"]))
        self.send_response(status)
        for name, value in {"Content-Type": "text/html; charset=utf-8", **headers}.items():
            if name != "X-Sleep":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Engine(_Site):
    """Answers `site:` queries with the pages of that site, and open queries with the open-web pages."""

    def __init__(self, results: dict[str, list[dict]]):
        self.results = results
        self.queries: list[str] = []
        super().__init__(ENGINE, {})

    def answer(self, params: dict[str, list[str]]) -> dict:
        query = params["q"][0]
        assert params.get("format") == ["json"]
        self.queries.append(query)
        key = next((host for host in (TIER1, TIER2) if f"site:{host}" in query), "open")
        return {"query": query, "number_of_results": len(self.results[key]), "results": self.results[key],
                "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}


@pytest.fixture()
def web(tmp_path):
    tier1 = _Site(TIER1, {})
    tier2 = _Site(TIER2, {})
    open_web = _Site(ENGINE, {})
    tier1.pages.update({
        "/fleming": (200, page("Penicillin history", PENICILLIN, "2019-09-01T08:00:00Z"), {}),
        "/old": (301, b"", {"Location": "/fleming-copy"}),
        "/fleming-copy": (200, page("Penicillin history", PENICILLIN), {}),
        "/gone": (404, b"gone", {}),
    })
    tier2.pages.update({
        "/salt": (200, page("Salt substitute trial", SALT, "2021-08-29"), {}),
        "/fleming-syndicated": (200, page("Penicillin history", PENICILLIN, canonical=tier1.url("/fleming")), {}),
    })
    open_web.pages.update({
        "/salt-blog": (200, page("My salt blog", SALT + " I switched last year."), {}),
        "/slow": (200, page("Slow", SALT), {"X-Sleep": "2"}),
        "/fleming-mirror": (200, page("Penicillin history", PENICILLIN), {}),  # an independent copy (no canonical)
    })
    results = {
        TIER1: [{"url": tier1.url("/fleming"), "title": "Penicillin", "content": "Fleming 1928",
                 "publishedDate": "2019-09-01T00:00:00", "engine": "bing"},
                {"url": tier1.url("/old"), "title": "Penicillin (old link)", "content": "Fleming"},
                {"url": tier1.url("/gone"), "title": "Gone", "content": "x"}],
        TIER2: [{"url": tier2.url("/salt"), "title": "Salt", "content": "salt substitute"},
                {"url": tier2.url("/fleming-syndicated"), "title": "Penicillin", "content": "Fleming"}],
        "open": [{"url": open_web.url("/salt-blog"), "title": "Blog", "content": "salt"},
                 {"url": open_web.url("/slow"), "title": "Slow", "content": "salt"},
                 {"url": open_web.url("/fleming-mirror"), "title": "Penicillin", "content": "Fleming"}],
    }
    engine = _Engine(results)
    servers = [tier1, tier2, open_web, engine]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield {"engine": engine, "tier1": tier1, "tier2": tier2, "open": open_web, "cache": tmp_path / "web"}
    for server in servers:
        server.shutdown()
        server.server_close()


def searcher(web, **options) -> WebSearcher:
    tiers = TierTables.from_config({"default": {"tier1": [TIER1], "tier2": [TIER2]}})
    engine = SearxNG(web["engine"].url(""), timeout_s=5, transport=httpx.HTTPTransport())
    fetcher = PageFetcher(web["cache"] / "pages", timeout_s=0.5, retries=0, per_host_interval_s=0.0,
                          transport=httpx.HTTPTransport())
    return WebSearcher(engine, fetcher, tiers, web["cache"] / "search", min_evidence=1, min_relevance=0.4,
                       allow_private_hosts=options.pop("allow_private_hosts", True),
                       **options)


def test_tier_one_sites_answer_first_with_dates_and_the_failures_are_skipped_sources(web):
    found = searcher(web).search(["Fleming penicillin 1928"], k=3, claim="Fleming discovered penicillin in 1928.")
    assert found and found[0].tier == 1 and found[0].domain == TIER1
    assert found[0].published == "2019-09-01"
    assert "Fleming" in found[0].text
    engine_queries = web["engine"].queries
    assert engine_queries == [f"Fleming penicillin 1928 (site:{TIER1})"]  # tier 1 answered: no relaxation


def test_relaxes_tier_by_tier_and_reports_every_query_and_host(web):
    search = searcher(web)
    found = search.search(["salt substitute systolic blood pressure"], k=3, claim=SALT)
    assert [e.tier for e in found][:1] == [2]  # tier 1 had nothing relevant; tier 2 answered
    egress = search.egress()
    assert [q["query"] for q in egress["queries"]] == [f"salt substitute systolic blood pressure (site:{TIER1})",
                                                       f"salt substitute systolic blood pressure (site:{TIER2})"]
    assert {ENGINE, TIER1, TIER2} <= set(egress["hosts"])
    assert any("404" in str(issue) for issue in search.issues)  # /gone: a skipped source, not a crash


def test_the_open_web_is_asked_last_and_a_slow_page_is_a_skipped_source(web):
    search = searcher(web)
    search.min_evidence = 3  # more than tiers 1 and 2 hold: the open web is asked
    found = search.search(["salt substitute systolic blood pressure"], k=5, claim=SALT)
    assert [q["level"] for q in search.egress()["queries"]] == [1, 2, 3]
    assert web["engine"].queries[-1] == "salt substitute systolic blood pressure"  # no site: on the open level
    assert any("timed out" in str(issue) for issue in search.issues)
    assert sorted({e.tier for e in found}) == [2, 3] or sorted({e.tier for e in found}) == [2]
    # the same trial text on tier 2 and on the blog: one hit, the tier-2 copy, naming the other origin
    salt = [e for e in found if "5.4 mmHg" in e.text]
    assert salt[0].tier == 2


def test_a_syndicated_copy_is_not_corroboration_but_an_independent_one_is(web):
    search = searcher(web)
    search.min_evidence = 5
    found = search.search(["Fleming penicillin 1928"], k=5, claim="Fleming discovered penicillin in 1928.")
    fleming = [e for e in found if "St Mary" in e.text]
    assert len(fleming) == 1 and fleming[0].tier == 1  # three copies, one hit
    # /fleming-syndicated (tier 2) names /fleming as its canonical: the same origin, not a second voice;
    # /fleming-copy (reached through a redirect) is the same host; /fleming-mirror on the open web names no origin:
    # the one independent voice.
    assert fleming[0].corroborated_by == [ENGINE]


def test_a_rerun_sends_no_request(web):
    first = searcher(web)
    first.search(["Fleming penicillin 1928"], k=3, claim="Fleming discovered penicillin in 1928.")
    servers = (web["engine"], web["tier1"], web["tier2"], web["open"])
    before = [dict(s.hits) for s in servers]
    again = searcher(web)
    found = again.search(["Fleming penicillin 1928"], k=3, claim="Fleming discovered penicillin in 1928.")
    new = {path: s.hits[path] - b.get(path, 0) for s, b in zip(servers, before, strict=True) for path in s.hits
           if s.hits[path] != b.get(path, 0)}
    egress = again.egress()
    assert found and new == {"/gone": 1}  # only the page that failed is asked again (failures are not cached)
    assert egress["search_requests"] == 0 and egress["page_requests"] == 1
    assert egress["search_cache_hits"] == 1 and egress["page_cache_hits"] >= 1


def test_results_on_private_addresses_are_not_fetched_by_default(web):
    """A result URL on localhost / a private network (a page pointing factlab at an internal service) is a skipped
    source unless the run allows private hosts; the engine itself may be local (the user chose it)."""
    search = searcher(web, allow_private_hosts=False)
    found = search.search(["Fleming penicillin 1928"], k=3, claim="Fleming discovered penicillin in 1928.")
    assert found == [] and sum(web["tier1"].hits.values()) == 0
    assert any("private or local address" in str(issue) for issue in search.issues)
    assert search.egress()["search_requests"] >= 1  # the (local) engine was asked


def test_a_dead_engine_is_an_issue_not_a_crash(tmp_path):
    tiers = TierTables.from_config({"default": {"tier1": [TIER1]}})
    dead = SearxNG("http://127.0.0.1:9", timeout_s=0.5, transport=httpx.HTTPTransport())
    search = WebSearcher(dead, PageFetcher(tmp_path / "p", transport=httpx.HTTPTransport()), tiers, tmp_path / "s")
    assert search.search(["anything"], k=3) == []
    assert any("searxng" in str(issue) for issue in search.issues)


def test_searxng_answer_without_results_is_a_clear_error():
    with pytest.raises(SearchBackendError, match="json"):
        SearxNG.parse({"error": "format not allowed"})


def test_brave_parser_reads_braves_own_published_sample():
    """tests/retrieval/data/brave_web_search_sample.json is the "JSON Example" of Brave's web search documentation
    (github.com/brave/brave-search-skills, skills/web-search/SKILL.md, MIT), unchanged."""
    sample = json.loads((DATA / "brave_web_search_sample.json").read_text(encoding="utf-8"))
    (result,) = BraveSearch.parse(sample)
    assert result.url == "https://example.com/python-frameworks" and result.domain == "example.com"
    assert result.title == "Top Python Web Frameworks"
    assert result.snippet.startswith("A comprehensive guide") and "Additional excerpt 2" in result.snippet
    assert result.published == ""  # the sample has "age": "2 days ago", no page_age
    dated = {"web": {"results": [{**sample["web"]["results"][0], "page_age": "2025-04-12T14:22:41"}]}}
    assert BraveSearch.parse(dated)[0].published == "2025-04-12"


def test_brave_needs_its_key_and_never_shows_it(monkeypatch, web):
    monkeypatch.delenv("FACTLAB_TEST_BRAVE_KEY", raising=False)
    with pytest.raises(MissingSearchKeyError, match="FACTLAB_TEST_BRAVE_KEY"):
        BraveSearch(api_key_env="FACTLAB_TEST_BRAVE_KEY")
    monkeypatch.setenv("FACTLAB_TEST_BRAVE_KEY", "brv-secret-0123456789")
    brave = BraveSearch(api_key_env="FACTLAB_TEST_BRAVE_KEY", base_url=web["open"].url("/missing"),
                        transport=httpx.HTTPTransport())
    with pytest.raises(SearchBackendError) as error:  # the local server answers 404 with its body
        brave.search("x")
    assert "brv-secret" not in str(error.value) and "HTTP 404" in str(error.value)


@pytest.mark.slow
def test_verify_checks_a_document_against_a_searxng_endpoint(web, tmp_path, monkeypatch):
    """`python verify.py ... search=searxng` end to end (the fast checker, shipped models): evidence from the tier-1
    site with its date on the card, every query and host on the report, and a rerun served from the cache."""
    from omegaconf import OmegaConf

    from factlab.checkers.job import run
    from factlab.config import compose_config

    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path / "cache"))
    document = tmp_path / "report.md"
    document.write_text("# Note\n\nAlexander Fleming discovered penicillin in 1928 at St Mary's Hospital in London.\n",
                        encoding="utf-8")
    outputs = []
    for attempt in ("first", "again"):
        out = tmp_path / attempt
        cfg = compose_config("verify", [f"input={document}", "sources=null", f"output_dir={out}", "checker=fast",
                                        "search=searxng", f"retriever.backend.base_url={web['engine'].url('')}",
                                        f"retriever.cache_dir={web['cache']}", "retriever.fetch.retries=0",
                                        "retriever.fetch.timeout_s=1", "retriever.fetch.per_host_interval_s=0",
                                        "retriever.allow_private_hosts=true",
                                        "progress=false", "tracking=off"])
        OmegaConf.update(cfg, "retrieval.tiers", {"default": {"tier1": [TIER1], "tier2": [TIER2]}}, merge=False)
        run(cfg)
        outputs.append((json.loads((out / "cards.json").read_text(encoding="utf-8")),
                        (out / "report.html").read_text(encoding="utf-8")))
    (cards, html), (again, _) = outputs
    evidence = [e for p in cards["paragraphs"] for c in p["claims"] for e in c["evidence"]]
    assert evidence and evidence[0]["tier"] == 1 and evidence[0]["domain"] == TIER1
    assert evidence[0]["published"] == "2019-09-01"
    assert cards["egress"]["backend"] == "searxng" and TIER1 in cards["egress"]["hosts"]
    assert all("site:" in q["query"] for q in cards["egress"]["queries"] if q["level"] < 3)
    assert "Sent over the network" in html and f"site:{TIER1}" in html and "2019-09-01" in html
    assert again["egress"]["search_requests"] == 0 and again["egress"]["page_requests"] <= 1  # only /gone again


def test_a_page_read_for_one_claim_serves_the_next_and_a_failed_page_is_not_asked_again(web):
    search = searcher(web)
    claim = "Fleming discovered penicillin in 1928."
    first = search.search(["Fleming penicillin 1928"], k=3, claim=claim)
    hits = web["tier1"].hits["/gone"]
    second = search.search(["Fleming penicillin 1928", "penicillin discovery"], k=3, claim=claim)
    assert [e.chunk_id for e in second][:1] == [e.chunk_id for e in first][:1]
    assert web["tier1"].hits["/gone"] == hits  # the 404 of the first claim is not asked again in this run


def test_no_claim_level_cache_over_the_web(tmp_path):
    """A verdict cached against a page would not notice the page change: with a web search the claim cache is off
    (pages and search answers are cached instead)."""
    from factlab.pipeline.cache import ClaimCacheSettings

    tiers = TierTables.from_config({"default": {"tier1": [TIER1]}})
    web = WebSearcher(SearxNG("http://127.0.0.1:9"), PageFetcher(tmp_path / "p"), tiers, tmp_path / "s")
    assert ClaimCacheSettings(True, 0.95, {}).open(None, web, {}, {}) is None


def test_brave_against_a_brave_shaped_local_server(monkeypatch, tmp_path):
    """The Brave backend end to end over real HTTP: the key goes in the X-Subscription-Token header (never the URL),
    the query and count as parameters, and the published sample comes back parsed."""
    sample = (DATA / "brave_web_search_sample.json").read_bytes()
    seen: list[tuple[str, str | None]] = []

    class Brave(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            seen.append((self.path, self.headers.get("X-Subscription-Token")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(sample)))
            self.end_headers()
            self.wfile.write(sample)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Brave)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("FACTLAB_TEST_BRAVE_KEY", "brv-secret-0123456789")
        brave = BraveSearch(api_key_env="FACTLAB_TEST_BRAVE_KEY", transport=httpx.HTTPTransport(),
                            base_url=f"http://127.0.0.1:{server.server_address[1]}/res/v1/web/search")
        (result,) = brave.search("python frameworks", n=5)
    finally:
        server.shutdown()
        server.server_close()
    path, token = seen[0]
    assert token == "brv-secret-0123456789" and "brv-secret" not in path
    assert parse_qs(urlsplit(path).query) == {"q": ["python frameworks"], "count": ["5"]}
    assert result.title == "Top Python Web Frameworks"


def test_pages_below_strong_relevance_come_back_weak(web):
    query, claim = ["salt substitute systolic blood pressure"], SALT
    strict = searcher(web, strong_relevance=0.99)
    strict.min_evidence = 3  # every level asked: hits of several relevances
    found = strict.search(query, k=5, claim=claim)
    assert len(found) >= 2 and all(hit.weak == (hit.score < 0.99) for hit in found), [(h.score, h.weak) for h in found]
    assert any(hit.weak for hit in found), [h.score for h in found]
    loose = searcher(web, strong_relevance=0.0)
    loose.min_evidence = 3
    again = loose.search(query, k=5, claim=claim)
    assert [h.chunk_id for h in again] == [h.chunk_id for h in found] and not any(h.weak for h in again)
