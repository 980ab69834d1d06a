"""Fetch web pages and reduce them to clean text and dates, politely: a disk cache, per-host rate limits, timeouts,
retries and size caps.

`PageFetcher.fetch(url)` returns a `Page` (trafilatura's main text, title, published / updated dates, canonical URL)
or a `FetchFailure` saying why in a few words ("HTTP 404", "timed out after 10 s"); a failed page is never an
exception to the caller, the report shows it as a skipped source. Pages are cached on disk, one JSON file per URL, so
a rerun sends no requests; failures are not cached, a rerun tries them again.

>>> iso_date("2021-03-04T10:00:00Z"), iso_date("2021/3/4"), iso_date("2021-03"), iso_date("March 2021")
('2021-03-04', '2021-03-04', '2021-03', '')
>>> str(FetchFailure("https://www.example.org/a.pdf", "not HTML (application/pdf)"))
'https://www.example.org/a.pdf: not HTML (application/pdf)'
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import math
import re
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import lxml.html  # trafilatura's own parser (a hard dependency of it): read the meta tags it does not return
import trafilatura
from lxml import etree

from factlab.atomic import write_json
from factlab.retrieval.tiers import domain_from_url

logger = logging.getLogger(__name__)

DEFAULT_USER_AGENT = "factlab/0.1 (+fact-checking research; respects robots by rate)"
MAX_RETRY_AFTER_S = 10.0  # a longer Retry-After is cut to this: one slow source must not stall a whole check
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.1"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_ISO_DATE = re.compile(r"(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?")
_CHARSET_IN_HEADER = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
_CHARSET_IN_META = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
_WIDER_CHARSET = {"gb2312": "gb18030", "gbk": "gb18030"}  # pages labelled gb2312 often hold GBK/GB18030 characters
# Meta tags (property=, name=, itemprop=, lower-cased) read when trafilatura finds no date, most specific first.
_PUBLISHED_KEYS = ("article:published_time", "og:published_time", "datepublished", "citation_publication_date",
                   "dc.date.issued", "dcterms.issued", "pubdate", "publishdate", "publish-date", "parsely-pub-date",
                   "sailthru.date", "date")
_UPDATED_KEYS = ("article:modified_time", "og:updated_time", "datemodified", "dc.date.modified", "dcterms.modified",
                 "last-modified")


def iso_date(value: str) -> str:
    """`value` as "YYYY-MM-DD" (or "YYYY-MM") when it starts with such a date, the time after it dropped; else "".

    >>> iso_date(" 2020-07-01T23:30:00-05:00"), iso_date("2021-13-01"), iso_date("2021-02-30"), iso_date("")
    ('2020-07-01', '', '', '')
    """
    match = _ISO_DATE.match(value.strip())
    if match is None:
        return ""
    year, month, day = (int(part) if part else None for part in match.groups())
    try:
        date = datetime(year, month, day or 1)
    except ValueError:
        return ""
    return date.strftime("%Y-%m-%d" if day else "%Y-%m")


def http_date(value: str) -> str:
    """An HTTP date header (Last-Modified) as "YYYY-MM-DD"; "" when absent or unreadable.

    >>> http_date("Wed, 21 Oct 2015 07:28:00 GMT"), http_date("yesterday")
    ('2015-10-21', '')
    """
    try:
        return email.utils.parsedate_to_datetime(value).date().isoformat()
    except (TypeError, ValueError, IndexError):
        return ""


def retry_after_s(value: str | None) -> float | None:
    """Seconds a Retry-After header asks to wait (a number of seconds or an HTTP date); None when absent or unreadable.

    >>> retry_after_s("3"), retry_after_s(None), retry_after_s("soon"), retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT")
    (3.0, None, None, 0.0)
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _parse_html(html: str) -> etree._Element | None:
    """The lxml tree of `html`, or None for an empty or unparseable page (encoded first: lxml refuses str input
    carrying an XML encoding declaration)."""
    try:
        return lxml.html.document_fromstring(html.encode("utf-8", "replace"),
                                             parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (etree.ParserError, ValueError):
        return None


def _meta_values(tree: etree._Element) -> dict[str, str]:
    """Lower-cased meta key (property, name, itemprop or http-equiv) -> its first value; <time itemprop datetime> and
    JSON-LD datePublished / dateModified are included as "datepublished" / "datemodified"."""
    values: dict[str, str] = {}
    for element in tree.iter("meta"):
        key = element.get("property") or element.get("name") or element.get("itemprop") or element.get("http-equiv")
        if key and element.get("content"):
            values.setdefault(key.strip().lower(), element.get("content").strip())
    for element in tree.xpath("//*[@itemprop][@datetime]"):
        values.setdefault(element.get("itemprop").strip().lower(), element.get("datetime").strip())
    for script in tree.xpath("//script[contains(@type, 'ld+json')]"):
        try:
            stack = [json.loads(script.text or "")]
        except ValueError:
            continue
        while stack:
            item = stack.pop(0)
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                for key in ("datePublished", "dateModified"):
                    if isinstance(item.get(key), str):
                        values.setdefault(key.lower(), item[key])
                stack.extend(value for value in item.values() if isinstance(value, dict | list))
    return values


def _first_date(values: Mapping[str, str], keys: Iterable[str]) -> str:
    return next((date for key in keys if (date := iso_date(values.get(key, "")))), "")


def _canonical_url(tree: etree._Element, url: str) -> str:
    for link in tree.iter("link"):
        if "canonical" in (link.get("rel") or "").lower().split() and (href := (link.get("href") or "").strip()):
            canonical = urljoin(url, href)
            return canonical if urlsplit(canonical).scheme in ("http", "https") else ""
    return ""


def extract_page(html: str, url: str) -> tuple[str, str, str, str, str]:
    """Reduce one HTML page to `(title, text, published, updated, canonical_url)`.

    `text` is trafilatura's main text (menus, boilerplate and reader comments dropped; "" when it finds none);
    `published` is trafilatura's date, else the page's meta tags or JSON-LD (article:published_time,
    datePublished...); `updated` comes from the meta tags or JSON-LD (article:modified_time, dateModified); dates are
    "YYYY-MM-DD", "YYYY-MM" or "". `canonical_url` is the page's <link rel=canonical>, made absolute, or "".

    Args:
        html: the page, decoded.
        url: where it was fetched from (after redirects): resolves a relative canonical link, helps trafilatura.

    Returns:
        The five strings, each "" when the page does not say.

    >>> html = ('<html><head><title>Flood report</title>'
    ...         '<meta property="article:published_time" content="2021-03-04T10:00:00Z">'
    ...         '<meta property="article:modified_time" content="2021-03-05T08:00:00Z">'
    ...         '<link rel="canonical" href="/news/flood"></head><body><article>'
    ...         '<p>The river rose two metres overnight and three villages were evacuated.</p></article></body></html>')
    >>> extract_page(html, "https://example.org/news/flood?ref=feed")  # doctest: +NORMALIZE_WHITESPACE
    ('Flood report', 'The river rose two metres overnight and three villages were evacuated.', '2021-03-04',
     '2021-03-05', 'https://example.org/news/flood')
    >>> extract_page("", "https://example.org/")
    ('', '', '', '', '')
    """
    tree = _parse_html(html) if html.strip() else None
    if tree is None:
        return "", "", "", "", ""
    try:
        document = trafilatura.bare_extraction(html, url=url or None, with_metadata=True, include_comments=False,
                                               include_tables=True)
    except Exception as exc:  # arbitrary web HTML can break a parser anywhere; the page just has no text
        logger.debug("trafilatura failed on %s: %s", url, type(exc).__name__)
        document = None
    text = ((document.text if document is not None else "") or "").strip()
    title = ((document.title if document is not None else "") or tree.findtext(".//title") or "").strip()
    values = _meta_values(tree)
    published = iso_date((document.date if document is not None else "") or "") or _first_date(values, _PUBLISHED_KEYS)
    return title, text, published, _first_date(values, _UPDATED_KEYS), _canonical_url(tree, url)


def _decode(body: bytes, content_type: str) -> str:
    """The body as text: the charset of the Content-Type header, else of a <meta charset>, else UTF-8."""
    declared = _CHARSET_IN_HEADER.search(content_type) or _CHARSET_IN_META.search(body[:4096])
    charset = declared.group(1) if declared else ""
    charset = charset.decode("ascii", "replace") if isinstance(charset, bytes) else charset
    for encoding in (_WIDER_CHARSET.get(charset.lower(), charset), "utf-8"):
        if encoding:
            try:
                return body.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                continue
    return body.decode("utf-8", errors="replace")


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Page:
    """One fetched page reduced to text.

    `domain` is the host of `final_url` (after redirects: a shortener's target is the source), as
    `tiers.domain_from_url` writes it; dates are "YYYY-MM-DD", "YYYY-MM" or ""; `canonical_url` ("" if none) lets
    syndicated copies of one origin count once; `fetched_at` is when the page was downloaded (UTC, ISO), also for a
    page read from the cache.
    """

    url: str
    final_url: str
    domain: str
    status: int
    title: str
    text: str
    published: str
    updated: str
    canonical_url: str
    fetched_at: str
    from_cache: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> Page:
        """The inverse of `to_dict`; unknown keys are ignored, a missing one raises TypeError."""
        known = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


@dataclass
class FetchFailure:
    """A page that could not be used, and why in a few words; `host` defaults to the URL's domain."""

    url: str
    reason: str
    host: str = ""

    def __post_init__(self) -> None:
        self.host = self.host or domain_from_url(self.url)

    def __str__(self) -> str:
        return f"{self.url}: {self.reason}"


class _Transient(Exception):
    """A failure worth another attempt (connection error, timeout, 429, 5xx); `retry_after` is the server's ask."""

    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def _connect_reason(exc: httpx.ConnectError) -> str:
    message = str(exc).lower()
    if "refused" in message:
        return "connection refused"
    if any(word in message for word in ("name or service", "nodename", "getaddrinfo", "name resolution")):
        return "host not found"
    return "connection failed"


class PageFetcher:
    """Fetch pages over HTTP(S) into `Page`s, with a disk cache, per-host rate limits, timeouts, retries, size caps.

    - Cache: one JSON file per URL (exactly as asked) in `cache_dir`, named by the URL's sha256, written atomically
      (a killed run never leaves a torn entry; a torn or unreadable one is a miss and is rewritten). With
      `ttl_hours=None` a cached page never expires, so a rerun sends no requests; with a ttl an older entry is
      fetched again. Failures are NOT cached: a rerun tries them again.
    - Politeness: requests to one host (every redirect hop included) start at least `per_host_interval_s` apart,
      across the threads of `fetch_many` too.
    - Limits: connect / read timeouts of `timeout_s`, and a body still arriving `timeout_s` after its request was
      sent is dropped (a server trickling bytes cannot hold a fetch much longer); a body over `max_bytes` (by its
      Content-Length, or counted while read) is dropped; at most `max_redirects` redirects.
    - Retries: connection errors, timeouts, 429 and 5xx get up to `retries` more attempts after `backoff_s`,
      2 * backoff_s, ... (at least the server's Retry-After, cut to MAX_RETRY_AFTER_S); other 4xx never.
    - Only http(s); HTML and XHTML are extracted, text/plain taken as is, any other type is a failure.

    `stats` counts requests sent (every hop and attempt), cache hits, failures, bytes downloaded and the hosts asked.
    Use it as a context manager, or call `close()`, to release the connections.

    Args:
        cache_dir: folder of the cache (created when first written).
        timeout_s: connect / read timeout, and the deadline for a whole body, in seconds.
        retries: extra attempts after a transient failure.
        backoff_s: the first wait before a retry; it doubles with each retry.
        max_bytes: the largest body read (decoded bytes).
        per_host_interval_s: the least time between the starts of two requests to one host.
        max_redirects: redirects followed before "too many redirects".
        user_agent: the User-Agent header sent.
        ttl_hours: age after which a cached page is fetched again; None = never.
        transport: an httpx transport to send through (None: httpx's default, honouring proxy variables).

    Raises:
        ValueError: a non-positive timeout_s or max_bytes, or negative retries, backoff_s, per_host_interval_s.
    """

    def __init__(self, cache_dir: str | Path, timeout_s: float = 10.0, retries: int = 2, backoff_s: float = 0.5,
                 max_bytes: int = 2_000_000, per_host_interval_s: float = 1.0, max_redirects: int = 5,
                 user_agent: str = DEFAULT_USER_AGENT, ttl_hours: float | None = None,
                 transport: httpx.BaseTransport | None = None):
        if timeout_s <= 0 or max_bytes <= 0:
            raise ValueError(f"timeout_s and max_bytes must be positive, got timeout_s={timeout_s}, "
                             f"max_bytes={max_bytes}")
        if retries < 0 or backoff_s < 0 or per_host_interval_s < 0:
            raise ValueError(f"retries, backoff_s and per_host_interval_s must be >= 0, got retries={retries}, "
                             f"backoff_s={backoff_s}, per_host_interval_s={per_host_interval_s}")
        self.cache_dir = Path(cache_dir)
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_bytes = max_bytes
        self.per_host_interval_s = per_host_interval_s
        self.ttl_hours = ttl_hours
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=True,
                                    max_redirects=max_redirects, transport=transport,
                                    headers={"User-Agent": user_agent, "Accept": _ACCEPT},
                                    event_hooks={"request": [self._before_request]})
        self._lock = threading.Lock()  # guards the counters and the table of host locks
        self._host_locks: dict[str, threading.Lock] = {}
        self._last_request_at: dict[str, float] = {}
        self._local = threading.local()  # sent_at: when this thread's latest request (hop) started
        self._counts = {"requests": 0, "cache_hits": 0, "failures": 0, "bytes": 0}
        self._hosts: set[str] = set()

    @property
    def stats(self) -> dict:
        """`{requests, cache_hits, failures, bytes, hosts}`: a snapshot; hosts is the sorted list of every host asked
        (cache hits included) or reached by a redirect."""
        with self._lock:
            return {**self._counts, "hosts": sorted(self._hosts)}

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> PageFetcher:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def fetch(self, url: str) -> Page | FetchFailure:
        """The page at `url`, from the cache when it holds a fresh copy; a `FetchFailure` (never an exception) when
        the page cannot be had."""
        url = url.strip()
        host = domain_from_url(url)
        self._count(hosts=host)
        scheme = urlsplit(url).scheme.lower()
        if scheme not in ("http", "https"):
            return self._failed(FetchFailure(url, f"unsupported scheme ({scheme or 'none'})", host))
        cached = self._read_cache(url)
        if cached is not None:
            self._count(cache_hits=1)
            return cached
        result = self._fetch_with_retries(url)
        if isinstance(result, FetchFailure):
            return self._failed(result)
        self._write_cache(result)
        return result

    def fetch_many(self, urls: Iterable[str], max_workers: int = 4) -> list[Page | FetchFailure]:
        """`fetch` for each URL on up to `max_workers` threads, results in the order of `urls` (a URL listed twice is
        fetched once); the per-host interval holds across the threads."""
        urls = list(urls)
        unique = list(dict.fromkeys(urls))
        if not unique:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(unique))), thread_name_prefix="fetch") as pool:
            results = dict(zip(unique, pool.map(self.fetch, unique), strict=True))
        return [results[url] for url in urls]

    def _count(self, hosts: str = "", **counts: int) -> None:
        with self._lock:
            for name, amount in counts.items():
                self._counts[name] += amount
            if hosts:
                self._hosts.add(hosts)

    def _failed(self, failure: FetchFailure) -> FetchFailure:
        self._count(failures=1)
        logger.debug("fetch failed: %s", failure)
        return failure

    def _before_request(self, request: httpx.Request) -> None:
        """httpx's request hook, run before every request including each redirect hop: wait for the host's turn."""
        host = domain_from_url(str(request.url))
        self._wait_turn(host)
        self._count(hosts=host, requests=1)
        self._local.sent_at = time.monotonic()
        logger.debug("GET %s", request.url)

    def _wait_turn(self, host: str) -> None:
        if self.per_host_interval_s <= 0:
            return
        with self._lock:
            host_lock = self._host_locks.setdefault(host, threading.Lock())
        with host_lock:  # held while sleeping: the next thread for this host waits its own full interval after us
            wait = self._last_request_at.get(host, -math.inf) + self.per_host_interval_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_request_at[host] = time.monotonic()

    def _fetch_with_retries(self, url: str) -> Page | FetchFailure:
        for attempt in range(self.retries + 1):
            try:
                return self._attempt(url)
            except _Transient as exc:
                transient = exc
            if attempt < self.retries:
                delay = self.backoff_s * 2**attempt
                if transient.retry_after is not None:
                    delay = max(delay, min(transient.retry_after, MAX_RETRY_AFTER_S))
                logger.debug("%s: %s, retrying in %.2f s", url, transient.reason, delay)
                time.sleep(delay)
        attempts = f" ({self.retries + 1} attempts)" if self.retries else ""
        return FetchFailure(url, transient.reason + attempts)

    def _attempt(self, url: str) -> Page | FetchFailure:
        """One GET (redirects followed) and its extraction; raises _Transient for what a retry may fix."""
        try:
            downloaded = self._download(url)
        except httpx.TooManyRedirects:
            return FetchFailure(url, "too many redirects")
        except httpx.TimeoutException as exc:
            raise _Transient(f"timed out after {self.timeout_s:g} s") from exc
        except httpx.UnsupportedProtocol:
            return FetchFailure(url, "unsupported scheme (redirected to a non-HTTP URL)")
        except httpx.ConnectError as exc:
            raise _Transient(_connect_reason(exc)) from exc
        except httpx.TransportError as exc:  # the connection dropped mid-way (read error, protocol error)
            raise _Transient(f"connection failed ({type(exc).__name__})") from exc
        except httpx.InvalidURL:
            return FetchFailure(url, "invalid URL")
        except httpx.RequestError as exc:  # e.g. a body that does not decompress
            return FetchFailure(url, f"unreadable response ({type(exc).__name__})")
        if isinstance(downloaded, FetchFailure):
            return downloaded
        response, body = downloaded
        content_type = response.headers.get("Content-Type", "")
        text = _decode(body, content_type)
        final_url = str(response.url)
        if content_type.split(";")[0].strip().lower() == "text/plain":
            title, text, published, updated, canonical = "", text.strip(), "", "", ""
        else:
            title, text, published, updated, canonical = extract_page(text, final_url)
        return Page(url=url, final_url=final_url, domain=domain_from_url(final_url), status=response.status_code,
                    title=title, text=text, published=published,
                    updated=updated or http_date(response.headers.get("Last-Modified", "")),
                    canonical_url=canonical, fetched_at=_utc_now())

    def _download(self, url: str) -> tuple[httpx.Response, bytes] | FetchFailure:
        """The final response and its body, or a failure; the body is streamed so a cap or a deadline stops it."""
        with self._client.stream("GET", url) as response:
            status = response.status_code
            logger.debug("%s -> %s", url, status)
            if status == 429 or status >= 500:
                raise _Transient(f"HTTP {status}", retry_after_s(response.headers.get("Retry-After")))
            if not 200 <= status < 300:
                return FetchFailure(url, f"HTTP {status}")
            media_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if media_type and media_type not in _HTML_TYPES and media_type != "text/plain":
                return FetchFailure(url, f"not HTML ({media_type})")
            declared = response.headers.get("Content-Length", "").strip()
            if declared.isdigit() and int(declared) > self.max_bytes:
                return FetchFailure(url, f"larger than {self.max_bytes} bytes")
            deadline = self._local.sent_at + self.timeout_s
            body = bytearray()
            try:
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > self.max_bytes:
                        return FetchFailure(url, f"larger than {self.max_bytes} bytes")
                    if time.monotonic() > deadline:
                        raise _Transient(f"timed out after {self.timeout_s:g} s")
            finally:
                self._count(bytes=response.num_bytes_downloaded)
            return response, bytes(body)

    def _cache_path(self, url: str) -> Path:
        return self.cache_dir / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()}.json"

    def _read_cache(self, url: str) -> Page | None:
        path = self._cache_path(url)
        try:
            page = Page.from_dict(json.loads(path.read_text(encoding="utf-8")))
            if page.url != url:
                return None
            if self.ttl_hours is not None:
                age_s = (datetime.now(timezone.utc) - datetime.fromisoformat(page.fetched_at)).total_seconds()
                if age_s > self.ttl_hours * 3600:
                    return None
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, AttributeError) as exc:  # torn, foreign or old-format: a miss
            logger.debug("cache entry %s for %s is unreadable (%s): fetching again", path.name, url, exc)
            return None
        page.from_cache = True
        return page

    def _write_cache(self, page: Page) -> None:
        try:
            write_json(self._cache_path(page.url), {**page.to_dict(), "from_cache": False})
        except OSError as exc:  # a full or read-only disk costs the cache, not the page
            logger.warning("could not cache %s in %s: %s", page.url, self.cache_dir, exc)
