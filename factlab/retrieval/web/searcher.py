"""The web as the evidence search (`search=searxng` | `search=brave`): authority tables turned into site-restricted
queries tier by tier, pages fetched and cut into the chunks local sources get, the same `search(queries, k, claim)`
as the local `Retriever`.

For a claim of vertical v, level 1 asks the backend `<query> (site:a OR site:b ...)` for the tier-1 domains of v's
table (then the default table's), in batches of `sites_per_query`; level 2 the tier-2 domains; level 3 the open web.
The search stops at the first level where at least `min_evidence` chunks reach `min_relevance` (the seed's
relaxation). Every result's tier comes from its domain (an engine that ignores `site:` cannot lift a page); the same
text on several domains is one hit that names the others in `corroborated_by`, but copies whose canonical URL points
at one origin count as that origin once (syndication is not corroboration).

Nothing leaves the machine unless a run chooses this searcher. `egress()` lists the backend, every query sent and
every host asked; the report carries it. Search answers and pages are cached on disk (a rerun sends no request);
a page that fails is a skipped source on the report (`issues`), never a crash and never a "wrong".
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from factlab.atomic import read_json, write_json
from factlab.retrieval.chunking import chunk_spans
from factlab.retrieval.compress import compress
from factlab.retrieval.encoders import covers
from factlab.retrieval.fusion import inverse_document_frequencies, lexical_coverage
from factlab.retrieval.policy import check_relevance, relevance_cut, weak_below
from factlab.retrieval.tiers import TierTables, domain_from_url
from factlab.retrieval.tokenizer import tokenize
from factlab.retrieval.web.fetch import FetchFailure, Page, PageFetcher
from factlab.retrieval.web.search import SearchBackendError, WebResult
from factlab.schema import Evidence, normalise_text
from factlab.untrusted import WEB_SOURCE_PREFIX

logger = logging.getLogger(__name__)
OPEN_WEB = 3  # the level without a site restriction


def private_host(url: str) -> bool:
    """Whether `url` names this machine or a private network by its host (localhost, loopback, private, link-local
    or reserved IP literals): a search result pointing there is not fetched unless the run allows it (a page on the
    web must not make factlab read an internal service into a report). Names that resolve to such addresses are not
    caught here (no DNS lookup).

    >>> [private_host(u) for u in ("http://127.0.0.1:8/a", "http://169.254.169.254/", "http://[::1]/", "http://localhost/",
    ...                            "https://who.int/x", "http://10.0.0.7/")]
    [True, True, True, True, False, True]
    """
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private or address.is_loopback or address.is_link_local or address.is_reserved


def site_query(query: str, sites: Sequence[str]) -> str:
    """`query` restricted to `sites` with the `site:` operator SearxNG's engines and Brave read.

    >>> site_query("penicillin 1928", ["who.int", "gov"])
    'penicillin 1928 (site:who.int OR site:gov)'
    >>> site_query("penicillin 1928", [])
    'penicillin 1928'
    """
    return f"{query} ({' OR '.join(f'site:{site}' for site in sites)})" if sites else query


def tier_sites(tables: TierTables, vertical: str | None, tier: int) -> list[str]:
    """The domain patterns of `tier`: the vertical's own table first, then the default table's, each once.

    >>> tables = TierTables.from_config({"default": {"tier1": [".gov", "who.int"]}, "medical": {"tier1": ["nejm.org"]}})
    >>> tier_sites(tables, "medical", 1), tier_sites(tables, None, 1), tier_sites(tables, "medical", 2)
    (['nejm.org', 'gov', 'who.int'], ['gov', 'who.int'], [])
    """
    names = [name for name in (vertical, "default") if name and name in tables.tables]
    sites: list[str] = []
    for name in dict.fromkeys(names):
        sites += [p for p, t in tables.tables[name].patterns.items() if t == tier and p not in sites]
    return sites


@dataclass
class _WebIndex:
    """What the checker reads off a retriever's `index`: the source records so far (one per fetched page)."""

    sources: dict[str, dict] = field(default_factory=dict)
    chunks: list = field(default_factory=list)


@dataclass
class _Chunk:
    source_id: str
    chunk_id: str
    text: str
    start: int
    end: int
    tier: int
    domain: str
    origin: str  # the host of the page's canonical URL (its own host when none): syndicated copies share it
    title: str
    published: str
    tokens: set[str]


class WebSearcher:
    """Search the web through a backend, tier by tier (see the module doc).

    Args:
        backend: a `factlab.retrieval.web.search` backend (`search(query, n) -> list[WebResult]`, `name`, `host`).
        fetcher: the page fetcher (disk cache, rate limits, timeouts).
        tiers: the authority tables (conf/tiers through the retrieval config).
        cache_dir: where search answers are cached (one JSON file per backend and query).
        results_per_query: results asked per backend query.
        pages_per_level: pages fetched at most per level (the best-ranked first).
        sites_per_query: domains per `site:` query; site_batches: such queries per level and query at most.
        queries_per_level: the claim's first queries used per level (each costs a request per batch).
        min_evidence / min_relevance / strong_relevance: as the local retriever's (`retrieval.search`).
        max_chars: chunk size (`retrieval.ingest.max_chars`, as local sources).
        per_page: chunks of one page kept among the hits at most.
        compress: `retrieval.compress` (enabled, max_tokens, lexical_weight) for the snippets.
        encoder: the dense encoder (cosine joins lexical coverage in the relevance); None = lexical only.
        fetch_workers: pages fetched at once.
        host_failures_allowed: pages of one host that may fail (timeout, no connection, 5xx) before the host is
            left out for the rest of the run (a dead or slow host costs this many timeouts, not one per claim).
        allow_private_hosts: fetch result pages on localhost / private / link-local addresses (`private_host`); off
            by default, so a result cannot make factlab read an internal service (tests and a local mirror turn it on).
    """

    takes_vertical = True  # the checker passes the claim's vertical: its table decides the site queries

    def __init__(self, backend, fetcher: PageFetcher, tiers: TierTables, cache_dir: str | Path, *,
                 results_per_query: int = 8, pages_per_level: int = 5, sites_per_query: int = 8,
                 site_batches: int = 2, queries_per_level: int = 2, min_evidence: int = 2,
                 min_relevance: float | Mapping[str, float] = 0.5,
                 strong_relevance: float | Mapping[str, float] | None = None, max_chars: int = 800, per_page: int = 2,
                 compress: Mapping | None = None, encoder=None,
                 fetch_workers: int = 4, host_failures_allowed: int = 2, allow_private_hosts: bool = False) -> None:
        self.backend, self.fetcher, self.tiers = backend, fetcher, tiers
        self.cache_dir = Path(cache_dir)
        self.results_per_query, self.pages_per_level = int(results_per_query), int(pages_per_level)
        self.sites_per_query, self.site_batches = int(sites_per_query), int(site_batches)
        self.queries_per_level = int(queries_per_level)
        self.min_evidence, self.min_relevance = int(min_evidence), check_relevance(min_relevance)
        self.strong_relevance = (None if strong_relevance is None
                                 else check_relevance(strong_relevance, "retrieval.search.strong_relevance"))
        self.max_chars, self.per_page = int(max_chars), int(per_page)
        self.compression = dict(compress or {"enabled": False})
        self.encoder = encoder
        self.fetch_workers = int(fetch_workers)
        self.index = _WebIndex()
        self.issues: list[FetchFailure | str] = []
        self._queries: list[dict] = []
        self._search_requests = self._search_cache_hits = 0
        self._lock = threading.Lock()
        self._pages: dict[str, list[_Chunk]] = {}  # final url -> its chunks (a page is read once per run)
        self._failed: dict[str, FetchFailure] = {}  # url -> why it failed (not asked again in this run)
        self._host_failures: dict[str, int] = {}  # host -> pages that timed out / found no server there
        self.host_failures_allowed = int(host_failures_allowed)
        self.allow_private_hosts = bool(allow_private_hosts)

    @classmethod
    def from_config(cls, backend, fetch: Mapping, settings, cache_dir: str | None = None, sources=None,
                    **options) -> WebSearcher:
        """The searcher of a checker (conf/search/<backend>.yaml): `backend` and `fetch` are config nodes, `settings`
        the retrieval config (tiers, chunk size, relevance, compression, encoder); `cache_dir` None = the cache
        root's `web/` folder. `sources` (a local folder an evaluation job may set) is not searched: the web is."""
        from hydra.utils import instantiate
        from omegaconf import OmegaConf

        from factlab.runtime import cache_root

        settings = OmegaConf.create(settings) if isinstance(settings, dict) else settings
        root = Path(cache_dir) if cache_dir else cache_root() / "web"
        fetcher = PageFetcher(root / "pages", **dict(fetch))
        return cls(instantiate(backend), fetcher, TierTables.from_config(settings.tiers), root / "search",
                   min_evidence=settings.search.min_evidence, min_relevance=settings.search.min_relevance,
                   strong_relevance=settings.search.get("strong_relevance"),
                   max_chars=settings.ingest.max_chars, compress=dict(settings.compress),
                   encoder=instantiate(settings.encoder), **options)

    # what the report shows --------------------------------------------------------------------------------------

    def egress(self) -> dict:
        """What left the machine: the backend, every query sent (and whether its answer came from the cache), every
        host asked, request and cache counts."""
        pages = self.fetcher.stats
        return {"backend": self.backend.name, "queries": list(self._queries),
                "hosts": sorted({self.backend.host, *pages["hosts"]}),
                "search_requests": self._search_requests, "search_cache_hits": self._search_cache_hits,
                "page_requests": pages["requests"], "page_cache_hits": pages["cache_hits"],
                "page_failures": pages["failures"]}

    # search -----------------------------------------------------------------------------------------------------

    def search(self, queries: list[str], k: int, claim: str | None = None, max_tokens: int | None = None,
               vertical: str | None = None) -> list[Evidence]:
        """Up to k evidence snippets from the web, highest authority level first (see the module doc).

        Raises:
            ValueError: no usable query and no claim, or k < 1.
        """
        queries = [q.strip() for q in queries if q and q.strip()] or ([claim] if claim else [])
        if not queries:
            raise ValueError("search needs at least one non-empty query, or a claim to use as the query")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        asked = queries[: self.queries_per_level]
        pool: list[_Chunk] = []
        seen_urls: set[str] = set()
        hits: list[tuple[_Chunk, float]] = []
        for level in (1, 2, OPEN_WEB):
            sites = tier_sites(self.tiers, vertical, level) if level < OPEN_WEB else []
            if level < OPEN_WEB and not sites:
                continue
            batches = [sites[i:i + self.sites_per_query] for i in range(0, len(sites), self.sites_per_query)]
            results: list[WebResult] = []
            for query in asked:
                for batch in batches[: self.site_batches] or [[]]:
                    results += self._ask(site_query(query, batch), level)
            if not self.allow_private_hosts:
                for r in results:
                    if private_host(r.url) and r.url not in self._failed:
                        self._failed[r.url] = FetchFailure(r.url, "not fetched: a private or local address")
                        with self._lock:
                            self.issues.append(self._failed[r.url])
            urls = [r.url for r in results if r.url not in seen_urls and r.url not in self._failed
                    and self._host_failures.get(r.domain, 0) < self.host_failures_allowed]
            urls = list(dict.fromkeys(urls))[: self.pages_per_level]
            seen_urls.update(urls)
            published = {r.url: r.published for r in results}
            for url, page in zip(urls, self.fetcher.fetch_many(urls, self.fetch_workers), strict=True):
                if isinstance(page, FetchFailure):
                    with self._lock:  # a page that failed is not asked again in this run; a host that keeps
                        self.issues.append(page)  # failing to answer is left out for the rest of the run
                        self._failed[url] = page
                        if not page.reason.startswith("HTTP 4"):
                            self._host_failures[page.host] = self._host_failures.get(page.host, 0) + 1
                    continue
                pool += self._chunks(page, vertical, published.get(url, ""))
            hits = self._hits(pool, queries)
            if len(hits) >= self.min_evidence:
                break
        return self._evidence(hits, k, claim, max_tokens, weak_below(self.strong_relevance, claim or queries[0]))

    def _ask(self, query: str, level: int) -> list[WebResult]:
        """The backend's results for one query, from the disk cache when asked before; a failed request is an issue."""
        key = hashlib.sha256(f"{self.backend.name}\n{query}".encode()).hexdigest()
        path = self.cache_dir / f"{key}.json"
        cached = read_json(path, None, "a cached search answer")  # a torn file is a miss and is rewritten
        if isinstance(cached, dict) and isinstance(cached.get("results"), list):
            with self._lock:
                self._search_cache_hits += 1
                self._queries.append({"query": query, "level": level, "cached": True})
            return [WebResult(**row) for row in cached["results"]]
        with self._lock:
            self._search_requests += 1
            self._queries.append({"query": query, "level": level, "cached": False})
        try:
            results = self.backend.search(query, self.results_per_query)
        except SearchBackendError as exc:
            with self._lock:
                self.issues.append(f"search {self.backend.name}: {exc}")
            return []
        write_json(path, {"backend": self.backend.name, "query": query,
                          "results": [r.__dict__ for r in results]})
        return results

    def _chunks(self, page: Page, vertical: str | None, result_date: str) -> list[_Chunk]:
        """The page as chunks (once per run), registered as a source record for cards and timeliness."""
        if page.final_url in self._pages:  # read for an earlier claim of this run: its chunks again
            return self._pages[page.final_url]
        source_id = WEB_SOURCE_PREFIX + hashlib.sha256(page.final_url.encode()).hexdigest()[:12]
        tier = self.tiers.tier_for(page.domain, vertical)
        published = page.published or page.updated or result_date
        origin = domain_from_url(page.canonical_url) or page.domain
        with self._lock:
            self.index.sources[source_id] = {
                "source_id": source_id, "title": page.title or page.domain, "url": page.final_url,
                "domain": page.domain, "tier": tier, "date": published, "updated": page.updated,
                "fetched_at": page.fetched_at, "vertical": vertical or ""}
        chunks = [_Chunk(source_id, f"{source_id}#p1-c{n}", page.text[start:end], start, end, tier, page.domain,
                         origin, page.title, published, set(tokenize(f"{page.title}\n{page.text[start:end]}")))
                  for n, (start, end) in enumerate(chunk_spans(page.text, self.max_chars), 1)]
        self._pages[page.final_url] = chunks
        return chunks

    def _hits(self, pool: list[_Chunk], queries: list[str]) -> list[tuple[_Chunk, float]]:
        """The pool's chunks at or above `min_relevance` (max over queries of IDF-weighted coverage and cosine),
        at most `per_page` per page, best first."""
        if not pool:
            return []
        idf, n_docs = inverse_document_frequencies([chunk.tokens for chunk in pool])
        relevance = np.zeros(len(pool))
        for query in queries:
            tokens = tokenize(query)
            relevance = np.maximum(relevance, [lexical_coverage(tokens, c.tokens, idf, n_docs) for c in pool])
        covered = [query for query in queries if self.encoder is not None and covers(self.encoder, query)]
        if covered:  # cosines only for queries the encoder's vocabulary covers (factlab.retrieval.encoders.covers)
            vectors = np.asarray(self.encoder.encode([f"{c.title}\n{c.text}" for c in pool]), dtype=np.float32)
            encode = getattr(self.encoder, "encode_queries", self.encoder.encode)
            cosine = vectors @ np.asarray(encode(covered), dtype=np.float32).T
            relevance = np.maximum(relevance, np.clip(cosine.max(axis=1), 0.0, 1.0))
        order = sorted(range(len(pool)), key=lambda i: (pool[i].tier, -relevance[i], pool[i].chunk_id))
        taken: dict[str, int] = {}
        hits = []
        cut = relevance_cut(self.min_relevance, queries[0])
        for i in order:
            if relevance[i] >= cut and taken.get(pool[i].source_id, 0) < self.per_page:
                taken[pool[i].source_id] = taken.get(pool[i].source_id, 0) + 1
                hits.append((pool[i], float(relevance[i])))
        return hits

    def _evidence(self, hits: list[tuple[_Chunk, float]], k: int, claim: str | None,
                  max_tokens: int | None, strong: float = 0.0) -> list[Evidence]:
        """The top k hits as evidence; one per distinct text, the highest-tier copy naming the other independent
        origins that carry it; a hit below `strong` relevance is `weak`."""
        groups: dict[str, list[tuple[_Chunk, float]]] = {}
        for chunk, score in hits:
            groups.setdefault(normalise_text(chunk.text), []).append((chunk, score))
        out = []
        for copies in groups.values():
            chunk, score = copies[0]  # hits are ordered by tier then relevance: the first copy is the best
            others = sorted({c.origin for c, _ in copies} - {chunk.origin})
            dates = sorted(c.published for c, _ in copies if c.published)  # the same text: its earliest date
            published = chunk.published or (dates[0] if dates else "")
            text, start, end = chunk.text, chunk.start, chunk.end
            if claim and self.compression.get("enabled"):
                snippet = compress(chunk.text, claim, max_tokens=max_tokens or int(self.compression["max_tokens"]),
                                   lexical_weight=float(self.compression["lexical_weight"]), encoder=self.encoder,
                                   offset=chunk.start)
                text, start, end = snippet.text, snippet.start, snippet.end
            out.append(Evidence(source_id=chunk.source_id, chunk_id=chunk.chunk_id, text=text, tier=chunk.tier,
                                domain=chunk.domain, title=chunk.title, score=round(score, 4), start=start, end=end,
                                corroborated_by=others, published=published, weak=score < strong))
            if len(out) >= k:
                break
        return out

