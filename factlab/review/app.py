"""The review web app (FastAPI, local, offline: no CDN, every byte served from here): the report as cells riskiest
first, each claim card with accept / reject / revise and a jump to its source chunk with the snippet highlighted.

    GET  /                 the review page (the report's HTML + the review layer)
    GET  /api/state        run key, reviewer, card versions, the current decisions, progress
    POST /api/decisions    {paragraph_id, claim_id, card_version, decision, reason, revised_claim, revised_label}
    GET  /api/metrics      adoption and risk coverage of the decisions so far

Every request passes factlab/review/security.py first (launch token, Host allowlist, Origin, XSRF, size limits,
security headers); a decision is a typed, length-limited request model; a busy or broken store answers 503.
"""

import functools
import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, ValidationError

from factlab.cards.html import render_html
from factlab.review.feedback import decided, product_metrics
from factlab.review.runs import ReviewTarget
from factlab.review.security import Access, Guard, Limits
from factlab.review.store import DECISIONS, Decision, DecisionError, DecisionStore, StoreUnavailable
from factlab.schema import LABELS

STATIC = Path(__file__).resolve().parent / "static"
RETRY_AFTER_S = 2  # what a 503 for a busy store asks the client to wait
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028",
                   0x2029: "\\u2029"}


@functools.cache
def _static(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def script_json(data: Any) -> str:
    """JSON safe inside a <script> element, as Django's json_script: `<`, `>`, `&`, U+2028 and U+2029 escaped, so
    neither `</script>` nor `<!--<script>` in a value can end or re-open the element.

    >>> print(script_json({"reason": "</script> & <!--<script>"}))
    {"reason": "\\u003c/script\\u003e \\u0026 \\u003c!--\\u003cscript\\u003e"}
    """
    return json.dumps(data, ensure_ascii=False).translate(_SCRIPT_ESCAPES)


def state(target: ReviewTarget, store: DecisionStore, reviewer: str) -> dict[str, Any]:
    current = store.current(target.key)
    versions = target.versions()
    return {"run_key": target.key, "reviewer": reviewer, "versions": versions,
            "decisions": {f"{p}/{c}": asdict(d) for (p, c), d in current.items()},
            "progress": {"decided": sum(f"{p}/{c}" in versions for p, c in current), "cards": len(versions)}}


def page(target: ReviewTarget, store: DecisionStore, reviewer: str) -> str:
    """The review page: the report riskiest first, the review style and script, and the state as inline JSON."""
    head = f"<style>{_static('review.css')}</style>\n"
    body = (f'<script type="application/json" id="review-state">{script_json(state(target, store, reviewer))}'
            f"</script>\n<script>{_static('review.js')}</script>\n")
    return render_html(target.report, risk_first=True, extra_head=head, extra_body=body)


def _utf8(text: str) -> str:
    text.encode("utf-8")  # a lone surrogate raises, and pydantic answers 422
    return text


def decision_request(limits: Limits) -> type[BaseModel]:
    """The body of POST /api/decisions: strict types (a number is not a string), no unknown fields, every text
    length-limited by `limits`."""

    def text(max_chars: int, min_chars: int = 0):
        return Annotated[str, StringConstraints(min_length=min_chars, max_length=max_chars), AfterValidator(_utf8)]

    name = text(limits.name_chars, 1)

    class DecisionRequest(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid")

        paragraph_id: name
        claim_id: name
        card_version: name
        decision: Literal[DECISIONS]
        reason: text(limits.reason_chars) = ""
        revised_claim: text(limits.claim_chars) | None = None
        revised_label: Literal[LABELS] | None = None
        reviewer: name | None = None

    return DecisionRequest


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Validation errors without the input they refuse (a refused body is never sent back)."""
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_context=False, include_input=False)]


def build_app(target: ReviewTarget, store: DecisionStore, reviewer: str, access: Access | None = None,
              limits: Limits | None = None):
    """The review app over one review target and one decision store, inside its `Guard` (what is returned).

    Args:
        target: the reviewed run; store: the decisions; reviewer: the name recorded when a request gives none.
        access: the launch token and extra allowed hosts (default: a random token, loopback only).
        limits: request size limits (default: `Limits()`, the numbers of conf/review.yaml).
    """
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
    from starlette.concurrency import run_in_threadpool

    access, limits = access or Access(), limits or Limits()
    request_model = decision_request(limits)
    app = FastAPI(title="factlab review", docs_url=None, redoc_url=None, openapi_url=None)
    business = target.report.business

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(request: Request, exc: StoreUnavailable):
        headers = {"Retry-After": str(RETRY_AFTER_S)} if exc.busy else {}
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": str(exc)}, status_code=503, headers=headers)
        return PlainTextResponse(f"{exc}\n(reload this page)", status_code=503, headers=headers)

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return page(target, store, reviewer)

    @app.get("/api/state")
    def get_state() -> dict:
        return state(target, store, reviewer)

    @app.post("/api/decisions")
    async def post_decision(request: Request) -> dict:
        try:
            body = request_model.model_validate_json(await request.body())
        except ValidationError as exc:
            return JSONResponse({"detail": _errors(exc)}, status_code=422)
        key = f"{body.paragraph_id}/{body.claim_id}"
        versions = target.versions()
        if key not in versions:
            raise HTTPException(404, f"no decidable card {key} in this run")
        if body.card_version != versions[key]:
            raise HTTPException(409, f"card {key} changed since the page was loaded (version {body.card_version}, "
                                     f"now {versions[key]}): reload")
        fields = body.model_dump(exclude={"reviewer"})
        try:
            decision = Decision(**fields, run_key=target.key, reviewer=body.reviewer or reviewer, business=business)
            return asdict(await run_in_threadpool(store.record, decision))  # a locked store waits off the event loop
        except DecisionError as exc:
            raise HTTPException(400, str(exc)) from None

    @app.get("/api/metrics")
    def metrics() -> dict:
        return product_metrics(decided(target, store.current(target.key)))

    return Guard(app, access, limits)


def server_config(app, host: str, port: int, log_level: str = "warning"):
    """The uvicorn config the app runs under: no access log (a first request's URL holds the launch token), the
    server's own request limits kept (h11 refuses a request head over 16 KiB)."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False)


class BackgroundServer:
    """The app on a free local port in a background thread (tests, the docs screenshot), once entered: `base` is its
    address, `url` the launch URL with the token (what a person opens), `token` the token."""

    def __init__(self, app: Guard, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        import socket

        if not port:
            with socket.socket() as probe:
                probe.bind((host, 0))
                port = probe.getsockname()[1]
        self.app, self.host, self.port, self.log_level = app, host, port, log_level
        self.token = app.access.token
        self.base = f"http://{host}:{port}/"
        self.url = f"{self.base}?token={self.token}"

    def __enter__(self) -> "BackgroundServer":
        import threading
        import time

        import uvicorn

        self.server = uvicorn.Server(server_config(self.app, self.host, self.port, self.log_level))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the review app did not start on {self.base}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
