"""Web search backends behind one call, `search(query, n) -> list[WebResult]`, chosen by config (conf/search/*.yaml).

- `SearxNG`: the JSON API of a SearxNG instance (`GET <base>/search?q=...&format=json`): open source and
  self-hostable, what a team runs in-house; no key. The instance must list `json` under `search.formats`.
- `BraveSearch`: the Brave Search web API (`GET https://api.search.brave.com/res/v1/web/search`, header
  `X-Subscription-Token`), a commercial API with its own index and a documented JSON response; its key is read from
  the environment variable the config names, registered as a secret (scrubbed from every error text) and never logged.

Both speak the `site:` operator, which `factlab.retrieval.web.searcher.WebSearcher` uses to ask the authority tables'
domains tier by tier. Nothing here runs unless a run chooses a web search config: the local corpus is the default.

>>> SearxNG.parse({"results": [{"url": "https://www.who.int/a", "title": "T", "content": "C",
...                              "publishedDate": "2023-05-01T00:00:00"}]})
[WebResult(url='https://www.who.int/a', title='T', snippet='C', published='2023-05-01', domain='who.int')]
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from factlab.retrieval.tiers import domain_from_url
from factlab.retrieval.web.fetch import iso_date
from factlab.secrets import register_secret, scrub

logger = logging.getLogger(__name__)


class SearchBackendError(RuntimeError):
    """A web search request failed (HTTP error, timeout, a response that is not the documented JSON)."""


class MissingSearchKeyError(RuntimeError):
    """The environment variable that should hold the search API's key is unset."""


@dataclass(frozen=True)
class WebResult:
    """One search result: the page's URL, its title and snippet as the engine shows them, and a date if it gave one."""

    url: str
    title: str
    snippet: str
    published: str = ""  # ISO date (YYYY-MM-DD) when the engine knows one
    domain: str = ""

    @classmethod
    def make(cls, url: str, title: str = "", snippet: str = "", published: str | None = "") -> WebResult:
        return cls(str(url), str(title or ""), str(snippet or ""), iso_date(str(published or "")),
                   domain_from_url(str(url)))


class _HTTPBackend:
    """Shared request handling: one httpx client, a timeout, errors with the host but never the key."""

    name = "web"

    def __init__(self, base_url: str, timeout_s: float, transport: httpx.BaseTransport | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        if not str(base_url).startswith(("http://", "https://")):
            raise ValueError(f"{self.name}: base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = str(base_url).rstrip("/")
        self.host = domain_from_url(self.base_url) or self.base_url
        self.timeout_s = float(timeout_s)
        self._client = httpx.Client(timeout=self.timeout_s, transport=transport, follow_redirects=True,
                                    headers={"Accept": "application/json", **(headers or {})})
        self.requests = 0

    def _get(self, url: str, params: Mapping[str, object]) -> dict:
        self.requests += 1
        try:
            response = self._client.get(url, params=params)
        except httpx.TimeoutException as exc:
            raise SearchBackendError(f"{self.name} at {self.host}: timed out after {self.timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            raise SearchBackendError(scrub(f"{self.name} at {self.host}: {type(exc).__name__}: {exc}")) from exc
        if response.status_code != 200:
            raise SearchBackendError(scrub(f"{self.name} at {self.host}: HTTP {response.status_code} "
                                           f"{response.text[:200]!r}"))
        try:
            payload = response.json()
        except ValueError as exc:
            raise SearchBackendError(f"{self.name} at {self.host}: the answer is not JSON "
                                     f"({response.headers.get('content-type', '?')})") from exc
        if not isinstance(payload, dict):
            raise SearchBackendError(f"{self.name} at {self.host}: expected a JSON object, got "
                                     f"{type(payload).__name__}")
        return payload

    def close(self) -> None:
        self._client.close()


class SearxNG(_HTTPBackend):
    """A SearxNG instance's JSON API.

    Args:
        base_url: the instance, e.g. http://127.0.0.1:8888 (the `/search` path is added).
        timeout_s: per request.
        language: SearxNG's `language` parameter ("auto", "en", "zh-CN", ...).
        categories: SearxNG's `categories` ("general").
        transport: an httpx transport (tests may pass one; the shipped tests use a real server instead).
    """

    name = "searxng"

    def __init__(self, base_url: str, timeout_s: float = 10.0, language: str = "auto", categories: str = "general",
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, timeout_s, transport)
        self.language = language
        self.categories = categories

    def search(self, query: str, n: int = 10) -> list[WebResult]:
        """The first `n` results of `query` (SearxNG returns one page, ~20, whatever is asked)."""
        payload = self._get(f"{self.base_url}/search", {"q": query, "format": "json", "language": self.language,
                                                         "categories": self.categories, "pageno": 1})
        return self.parse(payload)[:n]

    @staticmethod
    def parse(payload: Mapping) -> list[WebResult]:
        """`results[]` (url, title, content, publishedDate) of a SearxNG answer; results without a URL are dropped."""
        results = payload.get("results")
        if not isinstance(results, list):
            raise SearchBackendError("searxng: the answer has no `results` list (is `json` in search.formats?)")
        return [WebResult.make(r["url"], r.get("title"), r.get("content"), r.get("publishedDate"))
                for r in results if isinstance(r, Mapping) and str(r.get("url", "")).startswith("http")]


class BraveSearch(_HTTPBackend):
    """The Brave Search web API.

    Args:
        api_key_env: the environment variable holding the key (read once here; never logged, scrubbed from errors).
        base_url: the endpoint (a proxy may stand in).
        timeout_s: per request.
        country / search_lang: Brave's `country` and `search_lang` parameters (None = Brave's default).
        transport: an httpx transport.

    Raises:
        MissingSearchKeyError: the variable is unset or empty.
    """

    name = "brave"

    def __init__(self, api_key_env: str = "BRAVE_SEARCH_API_KEY",
                 base_url: str = "https://api.search.brave.com/res/v1/web/search", timeout_s: float = 10.0,
                 country: str | None = None, search_lang: str | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise MissingSearchKeyError(f"search=brave needs an API key in the environment variable {api_key_env} "
                                        "(conf/search/brave.yaml `backend.api_key_env`); it is unset")
        register_secret(key)
        super().__init__(base_url, timeout_s, transport, headers={"X-Subscription-Token": key})
        self.country, self.search_lang = country, search_lang

    def search(self, query: str, n: int = 10) -> list[WebResult]:
        """The first `n` web results of `query` (Brave serves at most 20 a request)."""
        params: dict[str, object] = {"q": query, "count": max(1, min(int(n), 20))}
        params |= {k: v for k, v in (("country", self.country), ("search_lang", self.search_lang)) if v}
        return self.parse(self._get(self.base_url, params))[:n]

    @staticmethod
    def parse(payload: Mapping) -> list[WebResult]:
        """`web.results[]` (url, title, description, page_age) of a Brave answer; an answer with no web section
        (a query Brave answers with other verticals only) has no results."""
        web = payload.get("web") or {}
        if not isinstance(web, Mapping) or not isinstance(web.get("results", []), list):
            raise SearchBackendError("brave: `web.results` is not a list")
        out = []
        for r in web.get("results", []):
            if isinstance(r, Mapping) and str(r.get("url", "")).startswith("http"):
                snippet = " ".join([str(r.get("description") or ""), *map(str, r.get("extra_snippets") or [])])
                out.append(WebResult.make(r["url"], r.get("title"), snippet.strip(), r.get("page_age")))
        return out
