"""The retrieval service of the RL recipes: a FastAPI app on 127.0.0.1 serving `/retrieve` (query list -> top-k chunks
with ids) over factlab's retriever indexes, one per corpus key, started and stopped by the recipe around training.

    with RetrievalService({"bundled-1a2b": retriever}, default_k=3) as service:
        hits = retrieve(service.url, ["penicillin discovered 1928"], corpus="bundled-1a2b")

Each hit's text is cut to the sentences most relevant to its query (factlab.retrieval.compress), so a rollout's
context holds trimmed passages, never whole pages. Clients: `retrieve` (sync, TRL's tool) and `aretrieve` (async,
VERL's tool), both used through the same JSON contract.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

logger = logging.getLogger(__name__)


class RetrieveRequest(BaseModel):
    """The body of `POST /retrieve`."""

    queries: list[str] = Field(min_length=1)
    topk: int | None = Field(default=None, ge=1, le=50)
    corpus: str | None = None  # None = the only corpus (an error when the service holds several)


class RetrievalServiceError(RuntimeError):
    """The service did not start, or answered with an error."""


def create_app(retrievers: Mapping[str, object], default_k: int):
    """The FastAPI app: `POST /retrieve {"queries": [...], "topk": k, "corpus": key}` and `GET /health`.

    Args:
        retrievers: corpus key -> `factlab.retrieval.retriever.Retriever`.
        default_k: hits per query when the request gives no `topk`.

    Returns:
        The app; `/retrieve` answers `{"results": [[{chunk_id, source_id, text, tier, score}, ...] per query]}`.
    """
    from fastapi import FastAPI, HTTPException

    app = FastAPI(title="factlab retrieval")
    keys = sorted(retrievers)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "corpora": keys}

    @app.post("/retrieve")
    def retrieve_endpoint(request: RetrieveRequest) -> dict:  # sync: FastAPI runs it in its thread pool
        key = request.corpus
        if key is None and len(keys) == 1:
            key = keys[0]
        if key not in retrievers:
            raise HTTPException(404, f"unknown corpus {request.corpus!r}; this service holds {', '.join(keys)}")
        retriever = retrievers[key]
        k = request.topk or default_k
        return {"results": [search_hits(retriever, query, k) for query in request.queries]}

    return app


def search_hits(retriever, query: str, k: int) -> list[dict]:
    """What the `search` tool returns for one query (the service, the curriculum and the warm-start traces all use
    it): up to k hits as `{chunk_id, source_id, text, tier, score}`, each chunk trimmed to the query; none for an
    empty query."""
    if not query.strip():
        return []
    hits = retriever.search([query], k=k, claim=query)  # claim=query: trim each chunk to the query
    return [{"chunk_id": h.chunk_id, "source_id": h.source_id, "text": h.text, "tier": h.tier, "score": h.score}
            for h in hits]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RetrievalService:
    """Run `create_app(...)` with uvicorn in a background thread on 127.0.0.1; a context manager.

    Args:
        retrievers: corpus key -> Retriever.
        default_k: hits per query by default.
        port: the port; None = a free one.
        start_timeout_s: how long to wait for `/health`.
    """

    def __init__(self, retrievers: Mapping[str, object], default_k: int, port: int | None = None,
                 start_timeout_s: float = 30.0) -> None:
        self.retrievers = dict(retrievers)
        self.default_k = default_k
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self._server = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The `/retrieve` endpoint."""
        return f"http://127.0.0.1:{self.port}/retrieve"

    def start(self) -> RetrievalService:
        import httpx
        import uvicorn

        config = uvicorn.Config(create_app(self.retrievers, self.default_k), host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="factlab-retrieval", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1.0).status_code == 200:
                    logger.info("retrieval service on %s (%s)", self.url, ", ".join(self.retrievers))
                    return self
            except httpx.HTTPError:
                pass
            if not self._thread.is_alive():
                break
            time.sleep(0.1)
        self.stop()
        raise RetrievalServiceError(f"retrieval service on 127.0.0.1:{self.port} did not answer /health within "
                                    f"{self.start_timeout_s:.0f}s; is the port taken? pass another port")

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> RetrievalService:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _payload(queries: list[str], corpus: str | None, k: int | None) -> dict:
    return {"queries": list(queries), "topk": k, "corpus": corpus}


def _results(response, url: str) -> list[list[dict]]:
    if response.status_code != 200:
        raise RetrievalServiceError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
    return response.json()["results"]


def retrieve(url: str, queries: list[str], corpus: str | None = None, k: int | None = None,
             timeout_s: float = 30.0) -> list[list[dict]]:
    """Call `/retrieve` (blocking): one list of hits per query."""
    import httpx

    return _results(httpx.post(url, json=_payload(queries, corpus, k), timeout=timeout_s), url)


async def aretrieve(url: str, queries: list[str], corpus: str | None = None, k: int | None = None,
                    timeout_s: float = 30.0) -> list[list[dict]]:
    """Call `/retrieve` from async code (VERL's agent loop)."""
    import httpx

    async with httpx.AsyncClient(timeout=timeout_s) as client:
        return _results(await client.post(url, json=_payload(queries, corpus, k)), url)


def open_retrievers(corpora: Mapping[str, str | Path], index_root: str | Path, retrieval_cfg,
                    encoder=None) -> dict[str, object]:
    """Build (or incrementally refresh) one index per corpus folder and open it.

    Args:
        corpora: corpus key -> folder of sources (as written by `factlab.train.rl.data.prepare`).
        index_root: indexes go to `<index_root>/<key>`.
        retrieval_cfg: the `retrieval` config node (conf/retrieval/default.yaml).
        encoder: a shared encoder; None = `retrieval_cfg.encoder` instantiated once.
    """
    from hydra.utils import instantiate

    from factlab.retrieval.retriever import Retriever

    encoder = encoder if encoder is not None else instantiate(retrieval_cfg.encoder)
    return {key: Retriever.build(folder, Path(index_root) / key, retrieval_cfg, encoder=encoder)
            for key, folder in corpora.items()}
