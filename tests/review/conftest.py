"""The review app's fixtures: a composed review config over the small report, and the app served by a real uvicorn on
127.0.0.1 with a helper that sends real HTTP requests (authenticated and with the XSRF pair unless told not to)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest

from factlab.cards.model import write_cards_json
from factlab.config import compose_config
from factlab.review.app import BackgroundServer, build_app
from factlab.review.job import target_and_store
from factlab.review.runs import ReviewTarget
from factlab.review.store import DecisionStore

XSRF = "test-xsrf-value-0123456789"


@pytest.fixture()
def review_cfg(tmp_path, small_report):
    run = tmp_path / "verify-out"
    write_cards_json(small_report, run / "cards.json")
    return compose_config("review", [f"run={run}", f"db={tmp_path / 'reviews.sqlite'}", "tracking=off",
                                     f"feedback.out_dir={tmp_path / 'reflow'}", "reviewer=tester"])


@dataclass
class Served:
    """A running review app and what it serves."""

    server: BackgroundServer
    target: ReviewTarget
    store: DecisionStore

    def call(self, method: str, path: str, *, auth: bool = True, xsrf: bool = True, headers: dict | None = None,
             **kwargs) -> httpx.Response:
        """One real HTTP request (a fresh connection, no cookie jar): with the token header and the XSRF cookie +
        header unless `auth` / `xsrf` is False; `headers` added last (a None value drops a header)."""
        sent = {}
        if auth:
            sent["Authorization"] = f"token {self.server.token}"
        if xsrf:
            sent |= {"X-XSRF-Token": XSRF, "Cookie": f"_xsrf={XSRF}"}
        sent |= headers or {}
        sent = {k: v for k, v in sent.items() if v is not None}
        return httpx.request(method, self.server.base.rstrip("/") + path, headers=sent, timeout=30, **kwargs)

    def card(self) -> dict:
        """The fields that name the first decidable card, as a decision body starts."""
        key, version = next(iter(self.target.versions().items()))
        paragraph, claim = key.split("/")
        return {"paragraph_id": paragraph, "claim_id": claim, "card_version": version}


@pytest.fixture()
def served(review_cfg):
    target, store = target_and_store(review_cfg)
    with BackgroundServer(build_app(target, store, "tester")) as server:
        yield Served(server, target, store)


@pytest.fixture()
def serving():
    """`serving(server, target, store)`: a `Served` over a server a test started itself."""
    return Served
