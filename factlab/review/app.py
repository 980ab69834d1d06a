"""The review web app (FastAPI, local, offline: no CDN, every byte served from here): the report as cells riskiest
first, each claim card with accept / reject / revise and a jump to its source chunk with the snippet highlighted.

    GET  /                 the review page (the report's HTML + the review layer)
    GET  /api/state        run key, reviewer, card versions, the current decisions, progress
    POST /api/decisions    {paragraph_id, claim_id, card_version, decision, reason, revised_claim, revised_label}
    GET  /api/metrics      adoption and risk coverage of the decisions so far
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from factlab.cards.html import render_html
from factlab.review.feedback import decided, product_metrics
from factlab.review.runs import ReviewTarget
from factlab.review.store import Decision, DecisionError, DecisionStore

STATIC = Path(__file__).resolve().parent / "static"


@functools.cache
def _static(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element (no "</" can close it)."""
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")


def state(target: ReviewTarget, store: DecisionStore, reviewer: str) -> dict[str, Any]:
    current = store.current(target.key)
    versions = target.versions()
    return {"run_key": target.key, "reviewer": reviewer, "versions": versions,
            "decisions": {f"{p}/{c}": asdict(d) for (p, c), d in current.items()},
            "progress": {"decided": sum(f"{p}/{c}" in versions for p, c in current), "cards": len(versions)}}


def page(target: ReviewTarget, store: DecisionStore, reviewer: str) -> str:
    """The review page: the report riskiest first, the review style and script, and the state as inline JSON."""
    head = f"<style>{_static('review.css')}</style>\n"
    body = (f'<script type="application/json" id="review-state">{_script_json(state(target, store, reviewer))}'
            f"</script>\n<script>{_static('review.js')}</script>\n")
    return render_html(target.report, risk_first=True, extra_head=head, extra_body=body)


def build_app(target: ReviewTarget, store: DecisionStore, reviewer: str):
    """The FastAPI app over one review target and one decision store."""
    from fastapi import FastAPI, HTTPException
    from fastapi.responses import HTMLResponse

    app = FastAPI(title="factlab review", docs_url=None, redoc_url=None, openapi_url=None)
    business = target.report.business

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return page(target, store, reviewer)

    @app.get("/api/state")
    def get_state() -> dict:
        return state(target, store, reviewer)

    @app.post("/api/decisions")
    def post_decision(body: dict) -> dict:
        key = f"{body.get('paragraph_id')}/{body.get('claim_id')}"
        versions = target.versions()
        if key not in versions:
            raise HTTPException(404, f"no decidable card {key} in this run")
        if body.get("card_version") != versions[key]:
            raise HTTPException(409, f"card {key} changed since the page was loaded (version {body.get('card_version')}"
                                     f", now {versions[key]}): reload")
        try:
            decision = Decision.from_dict({**body, "run_key": target.key, "reviewer": body.get("reviewer") or reviewer,
                                           "business": business, "decided_at": ""})
            return asdict(store.record(decision))
        except DecisionError as exc:
            raise HTTPException(400, str(exc)) from None

    @app.get("/api/metrics")
    def metrics() -> dict:
        return product_metrics(decided(target, store.current(target.key)))

    return app


class BackgroundServer:
    """The app on a free local port in a background thread (tests, the docs screenshot); `url` once entered."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0) -> None:
        import socket

        if not port:
            with socket.socket() as probe:
                probe.bind((host, 0))
                port = probe.getsockname()[1]
        self.app, self.host, self.port = app, host, port
        self.url = f"http://{host}:{port}/"

    def __enter__(self) -> BackgroundServer:
        import threading
        import time

        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(self.app, host=self.host, port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the review app did not start on {self.url}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
