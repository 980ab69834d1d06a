"""PageFetcher against a real HTTP server on 127.0.0.1: extraction and dates, redirects, failures, retries, the size
cap, the deadline, the disk cache and the per-host interval."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from factlab.retrieval.web.fetch import FetchFailure, Page, PageFetcher

ARTICLE = """<html><head><title>Flood report - Example News</title>
<meta property="article:published_time" content="2021-03-04T10:00:00Z">
<meta property="article:modified_time" content="2021-03-05T08:00:00Z">
<link rel="canonical" href="https://news.example.org/2021/flood-report"></head>
<body><nav><a href="/">Home</a> | <a href="/world">World</a></nav><article><h1>Flood report</h1>
<p>The river rose two metres overnight and three villages were evacuated by the regional authorities.</p>
<p>Officials said the water would recede within a week, according to the regional emergency office.</p></article>
<footer>Copyright Example News</footer></body></html>"""
JSONLD = """<html><head><title>Harvest figures</title><script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [{"@type": "NewsArticle", "headline": "Harvest figures",
 "datePublished": "2020-07-01T09:00:00+08:00", "dateModified": "2020-07-02"}]}</script></head>
<body><article><p>The wheat harvest reached 134 million tonnes this year, the ministry of agriculture said.</p>
</article></body></html>"""
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
HUGE_BYTES = 20_000_000  # more than loopback socket buffers hold, so the server sees the client hang up
CHUNK = b"<p>" + b"x" * 65_530 + b"</p>"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.huge_sent = 0
        self.huge_aborted = threading.Event()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def handle_error(self, request, client_address) -> None:  # clients hanging up early is what some tests do
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", content_type: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _chunked(self, chunks) -> int:
        """Send `chunks` with Transfer-Encoding: chunked (no Content-Length); return the bytes sent."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            sent += len(chunk)
        self.wfile.write(b"0\r\n\r\n")
        return sent

    def do_GET(self) -> None:  # one branch per test page
        server: _Server = self.server
        path = self.path
        with server.lock:
            server.hits[path] += 1
            server.times[path].append(time.monotonic())
            hit = server.hits[path]
        article = ARTICLE.encode()
        if path in ("/article", "/article-2"):
            self._send(200, article)
        elif path == "/jsonld":
            self._send(200, JSONLD.encode())
        elif path == "/plain":
            self._send(200, b"Plain notes.\n", "text/plain; charset=utf-8", {"Last-Modified": LAST_MODIFIED})
        elif path == "/gbk":
            self._send(200, "<html><head><meta charset='gb2312'><title>洪水</title></head><body><p>河水上涨两米。</p>"
                            "</body></html>".encode("gbk"), "text/html")
        elif path == "/redirect/1":
            self._send(301, headers={"Location": "/redirect/2"})
        elif path == "/redirect/2":
            self._send(302, headers={"Location": "/article"})
        elif path in ("/loop/a", "/loop/b"):
            self._send(302, headers={"Location": "/loop/b" if path == "/loop/a" else "/loop/a"})
        elif path == "/flaky":
            self._send(500, b"oops") if hit == 1 else self._send(200, article)
        elif path == "/busy":
            self._send(429, b"slow down", headers={"Retry-After": "0"}) if hit == 1 else self._send(200, article)
        elif path == "/slow":
            time.sleep(1.5)
            self._send(200, article)
        elif path == "/trickle":  # every byte in time for the read timeout, the whole body far too late
            self._chunked(self._trickle())
        elif path == "/huge":
            try:
                self._chunked(CHUNK for _ in range(HUGE_BYTES // len(CHUNK)))
            except OSError:
                server.huge_aborted.set()
        elif path == "/declared-huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "5000000")
            self.end_headers()
            try:
                for _ in range(5000000 // len(CHUNK)):
                    self.wfile.write(CHUNK)
            except OSError:
                pass
        elif path == "/doc.pdf":
            self._send(200, b"%PDF-1.4 ...", "application/pdf")
        else:
            self._send(404, b"not here")

    @staticmethod
    def _trickle():
        for _ in range(15):
            time.sleep(0.2)
            yield b"<p>x</p>"


@pytest.fixture
def server():
    httpd = _Server()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def make_fetcher(tmp_path: Path):
    """A PageFetcher on a fresh cache folder, fast settings; the plain transport keeps proxy variables out."""
    made: list[PageFetcher] = []

    def build(**overrides) -> PageFetcher:
        settings = {"cache_dir": tmp_path / "cache", "timeout_s": 2.0, "retries": 0, "backoff_s": 0.01,
                    "per_host_interval_s": 0.0, "transport": httpx.HTTPTransport(), **overrides}
        made.append(PageFetcher(**settings))
        return made[-1]

    yield build
    for fetcher in made:
        fetcher.close()


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/nothing"


def test_article_text_dates_canonical(server, make_fetcher):
    page = make_fetcher().fetch(server.url("/article"))
    assert isinstance(page, Page) and not page.from_cache
    assert (page.status, page.domain, page.final_url) == (200, "127.0.0.1", server.url("/article"))
    assert page.title == "Flood report"
    assert "three villages were evacuated" in page.text and "Home" not in page.text and "Copyright" not in page.text
    assert (page.published, page.updated) == ("2021-03-04", "2021-03-05")
    assert page.canonical_url == "https://news.example.org/2021/flood-report"
    assert page.fetched_at.endswith("Z") and Page.from_dict(page.to_dict()) == page


def test_jsonld_dates_plain_text_and_declared_charset(server, make_fetcher):
    fetcher = make_fetcher()
    jsonld, plain, gbk = (fetcher.fetch(server.url(path)) for path in ("/jsonld", "/plain", "/gbk"))
    assert (jsonld.published, jsonld.updated, jsonld.canonical_url) == ("2020-07-01", "2020-07-02", "")
    assert "134 million tonnes" in jsonld.text
    assert (plain.text, plain.title, plain.published, plain.updated) == ("Plain notes.", "", "", "2015-10-21")
    assert (gbk.title, gbk.text) == ("洪水", "河水上涨两米。")


def test_redirect_chain_is_followed_and_every_hop_counted(server, make_fetcher):
    fetcher = make_fetcher()
    page = fetcher.fetch(server.url("/redirect/1"))
    assert isinstance(page, Page)
    assert (page.url, page.final_url) == (server.url("/redirect/1"), server.url("/article"))
    assert page.published == "2021-03-04"
    assert fetcher.stats["requests"] == 3


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/loop/a", "too many redirects"), ("/missing", "HTTP 404"), ("/doc.pdf", "not HTML (application/pdf)")],
)
def test_failures_name_the_reason_and_4xx_is_not_retried(server, make_fetcher, path, reason):
    fetcher = make_fetcher(retries=2, max_redirects=3)
    failure = fetcher.fetch(server.url(path))
    assert isinstance(failure, FetchFailure)
    assert (failure.reason, failure.host) == (reason, "127.0.0.1")
    assert str(failure) == f"{server.url(path)}: {reason}"
    assert fetcher.stats["failures"] == 1
    if path == "/missing":
        assert server.hits[path] == 1


def test_unsupported_scheme_sends_nothing(make_fetcher):
    fetcher = make_fetcher()
    failure = fetcher.fetch("ftp://files.example.org/report.html")
    assert isinstance(failure, FetchFailure) and failure.reason == "unsupported scheme (ftp)"
    assert failure.host == "files.example.org" and fetcher.stats["requests"] == 0


@pytest.mark.parametrize("path", ["/flaky", "/busy"])
def test_500_and_429_are_retried_until_the_page_comes(server, make_fetcher, path):
    fetcher = make_fetcher(retries=2)
    page = fetcher.fetch(server.url(path))
    assert isinstance(page, Page) and "three villages" in page.text
    assert server.hits[path] == 2 and fetcher.stats["requests"] == 2


def test_slow_server_times_out_and_is_retried(server, make_fetcher):
    fetcher = make_fetcher(timeout_s=0.5, retries=1)
    started = time.monotonic()
    failure = fetcher.fetch(server.url("/slow"))
    assert isinstance(failure, FetchFailure) and failure.reason == "timed out after 0.5 s (2 attempts)"
    assert time.monotonic() - started < 2.0
    assert server.hits["/slow"] == 2


def test_trickling_body_is_cut_at_the_deadline(server, make_fetcher):
    fetcher = make_fetcher(timeout_s=0.5)
    started = time.monotonic()
    failure = fetcher.fetch(server.url("/trickle"))
    assert isinstance(failure, FetchFailure) and failure.reason == "timed out after 0.5 s"
    assert time.monotonic() - started < 1.5  # the server would take 3 s


def test_huge_chunked_body_is_cut_while_read(server, make_fetcher):
    fetcher = make_fetcher(max_bytes=100_000)
    failure = fetcher.fetch(server.url("/huge"))
    assert isinstance(failure, FetchFailure) and failure.reason == "larger than 100000 bytes"
    assert server.huge_aborted.wait(5), "the server never saw the client hang up"
    assert fetcher.stats["bytes"] < 2_000_000


def test_declared_length_over_the_cap_is_refused_before_reading(server, make_fetcher):
    fetcher = make_fetcher(max_bytes=100_000)
    failure = fetcher.fetch(server.url("/declared-huge"))
    assert isinstance(failure, FetchFailure) and failure.reason == "larger than 100000 bytes"
    assert fetcher.stats["bytes"] == 0


def test_cache_hit_sends_no_request_even_in_a_new_fetcher(server, make_fetcher):
    url = server.url("/article")
    first = make_fetcher().fetch(url)
    again = make_fetcher()
    second = again.fetch(url)
    assert server.hits["/article"] == 1
    assert second.from_cache and Page.from_dict({**second.to_dict(), "from_cache": False}) == first
    assert again.stats == {"requests": 0, "cache_hits": 1, "failures": 0, "bytes": 0, "hosts": ["127.0.0.1"]}


def test_failures_are_not_cached(server, make_fetcher):
    fetcher = make_fetcher()
    assert isinstance(fetcher.fetch(server.url("/missing")), FetchFailure)
    assert isinstance(fetcher.fetch(server.url("/missing")), FetchFailure)
    assert server.hits["/missing"] == 2 and fetcher.stats["cache_hits"] == 0


def test_torn_cache_entry_is_a_miss_and_is_rewritten(server, make_fetcher, tmp_path):
    url = server.url("/article")
    make_fetcher().fetch(url)
    (entry,) = (tmp_path / "cache").glob("*.json")
    whole = entry.read_text(encoding="utf-8")
    entry.write_text(whole[: len(whole) // 2], encoding="utf-8")
    page = make_fetcher().fetch(url)
    assert not page.from_cache and server.hits["/article"] == 2
    assert json.loads(entry.read_text(encoding="utf-8"))["url"] == url
    assert sorted(path.name for path in (tmp_path / "cache").iterdir()) == [entry.name]  # no temporary file left


def test_ttl_refetches_an_old_entry(server, make_fetcher, tmp_path):
    url = server.url("/article")
    make_fetcher(ttl_hours=1).fetch(url)
    (entry,) = (tmp_path / "cache").glob("*.json")
    assert make_fetcher(ttl_hours=1).fetch(url).from_cache
    entry.write_text(json.dumps({**json.loads(entry.read_text()), "fetched_at": "2020-01-01T00:00:00Z"}))
    assert make_fetcher(ttl_hours=None).fetch(url).from_cache  # no ttl: never expires
    assert not make_fetcher(ttl_hours=1).fetch(url).from_cache
    assert server.hits["/article"] == 2


def test_per_host_interval_holds_across_threads(server, make_fetcher):
    fetcher = make_fetcher(per_host_interval_s=0.3)
    pages = fetcher.fetch_many([server.url("/article"), server.url("/article-2")], max_workers=2)
    assert all(isinstance(page, Page) for page in pages)
    (first,), (second,) = server.times["/article"], server.times["/article-2"]
    assert abs(second - first) >= 0.2  # 0.3 s apart as sent; slack for a busy machine, ~0 s without the limit


def test_fetch_many_keeps_order_and_mixes_pages_and_failures(server, make_fetcher):
    fetcher = make_fetcher()
    refused = _refused_url()
    urls = [server.url("/article"), server.url("/missing"), refused, server.url("/plain"), server.url("/article")]
    results = fetcher.fetch_many(urls, max_workers=4)
    assert [type(result).__name__ for result in results] == ["Page", "FetchFailure", "FetchFailure", "Page", "Page"]
    assert [result.url for result in results] == urls
    assert results[1].reason == "HTTP 404" and results[2].reason == "connection refused"
    assert server.hits["/article"] == 1  # a URL listed twice is fetched once
    assert fetcher.stats["failures"] == 2 and fetcher.stats["hosts"] == ["127.0.0.1"]
