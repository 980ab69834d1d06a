# python benchmarks/web_search.py [--claims 60] [--k 5]
"""The web searcher (search=searxng) against a small local web built from the bundled corpus, in one run.

Every bundled source becomes an HTML page (title, text, its year as the published date) on a loopback "site" by its
tier: tier 1 on 127.0.0.2, tier 2 on 127.0.0.3, tier 3 on 127.0.0.1; a SearxNG-shaped endpoint on 127.0.0.1 ranks
the pages by BM25 and honours `site:` filters, as a real engine would. The bundled claims (en and zh, gold evidence)
are searched with the claim as the query. Measured: source-level recall@k of the gold sources, requests per claim
(search and page), the wall time per claim, the cache hit rate of a rerun with a fresh searcher on the same cache
(goal 100%), and what a dead tier-1 host and a slow one (answers after 3 s; fetch timeout 1 s) cost. No internet: every
server is started here. Writes outputs/benchmarks/web_search/results.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

OUT = Path("outputs/benchmarks/web_search")
HOSTS = {1: "127.0.0.2", 2: "127.0.0.3", 3: "127.0.0.1"}


class Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, pages: dict[str, bytes], delay_s: float = 0.0):
        self.pages, self.delay_s, self.hits = pages, delay_s, 0
        self.lock = threading.Lock()
        super().__init__((host, 0), Handler)

    def handle_error(self, request, client_address) -> None:
        pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        split = urlsplit(self.path)
        with self.server.lock:
            self.server.hits += 1
        if split.path == "/search":
            body, kind = json.dumps(self.server.engine(parse_qs(split.query)["q"][0])).encode(), "application/json"
        else:
            body, kind = self.server.pages.get(unquote(split.path), b""), "text/html; charset=utf-8"
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def html(source: dict) -> bytes:
    from html import escape

    date = f'<meta property="article:published_time" content="{source["year"]}-01-01">' if source.get("year") else ""
    paragraphs = "".join(f"<p>{escape(p)}</p>" for p in str(source["text"]).split("\n") if p.strip())
    return (f"<html><head><title>{escape(source.get('title') or source['source_id'])}</title>{date}</head><body>"
            f"<article><h1>{escape(source.get('title') or '')}</h1>{paragraphs}</article></body></html>").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--claims", type=int, default=60, help="claims per language (the first, in file order)")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()

    import httpx
    import numpy as np
    from rank_bm25 import BM25Okapi

    from factlab.data.jsonl import iter_jsonl
    from factlab.data.loaders.case_files import load as load_cases
    from factlab.retrieval.tiers import TierTables
    from factlab.retrieval.tokenizer import tokenize
    from factlab.retrieval.web.fetch import PageFetcher
    from factlab.retrieval.web.search import SearxNG
    from factlab.retrieval.web.searcher import WebSearcher

    sources = [row for path in sorted(Path("datasets/bundled/corpus").glob("*.jsonl")) for _, row in iter_jsonl(path)]
    sites = {tier: Site(host, {}) for tier, host in HOSTS.items()}
    engine = Site(HOSTS[3], {})
    url_of, source_of = {}, {}
    for source in sources:
        site = sites[int(source.get("tier") or 3)]
        path = "/" + quote(source["source_id"])
        site.pages[unquote(path)] = html(source)
        url = f"http://{site.server_address[0]}:{site.server_address[1]}{path}"
        url_of[source["source_id"]], source_of[url] = url, source["source_id"]
    urls = [url_of[s["source_id"]] for s in sources]
    bm25 = BM25Okapi([tokenize(f"{s.get('title', '')}\n{s['text']}") for s in sources])

    def answer(query: str) -> dict:
        allowed = [host for host in HOSTS.values() if f"site:{host}" in query]
        text = query.split(" (site:")[0]
        scores = bm25.get_scores(tokenize(text))
        order = [i for i in np.argsort(-scores) if scores[i] > 0
                 and (not allowed or urlsplit(urls[i]).hostname in allowed)][:10]
        return {"query": query, "results": [{"url": urls[i], "title": sources[i].get("title", ""),
                                             "content": str(sources[i]["text"])[:200]} for i in order]}

    engine.engine = answer
    servers = [*sites.values(), engine]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    cases = load_cases(name="bundled", data_root="datasets/bundled", files=["cases_*.jsonl"])
    claims = {"en": [], "zh": []}
    for case in cases:
        for claim in case["claims"]:
            gold = {e["chunk_id"].split("#")[0] for e in claim.get("evidence", [])}
            if gold and len(claims[case["lang"]]) < args.claims:
                claims[case["lang"]].append((claim["text"], gold))
    tiers = TierTables.from_config({"default": {"tier1": [HOSTS[1]], "tier2": [HOSTS[2]]}})
    cache = OUT / "cache"
    shutil.rmtree(cache, ignore_errors=True)

    def run(name: str, timeout_s: float = 5.0) -> dict:
        backend = SearxNG(f"http://{HOSTS[3]}:{engine.server_address[1]}", transport=httpx.HTTPTransport())
        fetcher = PageFetcher(cache / "pages", timeout_s=timeout_s, retries=0, per_host_interval_s=0.0,
                              transport=httpx.HTTPTransport())
        searcher = WebSearcher(backend, fetcher, tiers, cache / "search", min_relevance=0.5, min_evidence=2,
                               allow_private_hosts=True)  # the local web lives on loopback addresses
        per_lang = {}
        started = time.perf_counter()
        for lang, items in claims.items():
            found_recall = []
            for text, gold in items:
                found = searcher.search([text], k=args.k, claim=text)
                ids = {searcher.index.sources[e.source_id]["url"] for e in found}
                found_recall.append(len({source_of.get(u) for u in ids} & gold) / len(gold))
            per_lang[lang] = {"n": len(items), f"source_recall@{args.k}": round(float(np.mean(found_recall)), 3)}
        seconds = time.perf_counter() - started
        egress, n = searcher.egress(), sum(len(v) for v in claims.values())
        asked = egress["search_requests"] + egress["search_cache_hits"]
        pages = egress["page_requests"] + egress["page_cache_hits"]
        return {"run": name, **{f"{lang} {key}": value for lang, row in per_lang.items() for key, value in row.items()},
                "search requests / claim": round(egress["search_requests"] / n, 2),
                "page requests / claim": round(egress["page_requests"] / n, 2),
                "cache hit rate": round((egress["search_cache_hits"] + egress["page_cache_hits"])
                                        / max(1, asked + pages), 3),
                "s / claim": round(seconds / n, 3), "skipped pages": len(searcher.issues)}

    rows = [run("first run (cold cache)"), run("rerun, fresh searcher, same cache")]
    shutil.rmtree(cache, ignore_errors=True)
    sites[1].shutdown()
    sites[1].server_close()
    rows.append(run("tier-1 host dead (cold cache)"))
    shutil.rmtree(cache, ignore_errors=True)
    slow = Site(HOSTS[1], sites[1].pages, delay_s=3.0)
    slow.server_address  # noqa: B018 - a new port: point the engine's tier-1 URLs at it
    for i, url in enumerate(urls):
        if urlsplit(url).hostname == HOSTS[1]:
            urls[i] = url.replace(f":{sites[1].server_address[1]}/", f":{slow.server_address[1]}/")
    source_of.update({u: source_of.get(u) or sources[i]["source_id"] for i, u in enumerate(urls)})
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    rows.append(run("tier-1 host slow (3 s; fetch timeout 1 s)", timeout_s=1.0))
    for server in [*servers, slow]:
        server.shutdown()

    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(key, "")) for key in keys) + " |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps({"k": args.k, "rows": rows}, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
