"""The review app's trust boundary (issue 44), each probe of the outside review as a test against a real uvicorn on
127.0.0.1 with real HTTP requests: the launch token, the Host allowlist (DNS rebinding), Origin + XSRF on writes,
size limits (declared and chunked), typed bodies that never echo their input, the page's embedded JSON, the frame
headers, a busy / deleted store, loopback-only binding, and the token kept out of logs."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
from html.parser import HTMLParser

import httpx
import pytest

from factlab.config import compose_config
from factlab.review.app import BackgroundServer, build_app
from factlab.review.job import launch, target_and_store
from factlab.review.security import Limits, ReviewAccessError
from factlab.review.store import Decision, DecisionStore

LIMITS = Limits()
FRAME_HEADERS = {"content-security-policy": "frame-ancestors 'self'", "x-frame-options": "SAMEORIGIN",
                 "x-content-type-options": "nosniff"}


def _accept(served, **extra) -> dict:
    return {**served.card(), "decision": "accept", **extra}


def test_the_launch_url_logs_in_once_then_the_cookie_alone_authenticates(served):
    server = served.server
    with httpx.Client(base_url=server.base, timeout=30) as browser:
        assert browser.get("/").status_code == 403
        login = browser.get(f"/?token={server.token}&view=1")
        assert login.status_code == 303 and login.headers["location"] == "/?view=1"  # the token leaves the URL
        session = next(c for c in login.headers.get_list("set-cookie") if c.startswith("factlab-review-"))
        assert "HttpOnly" in session and "samesite=strict" in session.lower() and server.token not in session
        page = browser.get("/")
        assert page.status_code == 200 and 'id="review-state"' in page.text
        assert browser.get("/api/state").status_code == 200
        xsrf = browser.cookies["_xsrf"]  # set on page load, readable by the page's script
        accepted = browser.post("/api/decisions", json=_accept(served), headers={"X-XSRF-Token": xsrf})
        assert accepted.status_code == 200
    assert served.call("GET", f"/?token={server.token}x", auth=False).status_code == 403
    assert served.call("GET", "/api/state", auth=False, headers={"X-Factlab-Token": server.token}).status_code == 200
    assert served.call("GET", "/api/state", auth=False, headers={"X-Factlab-Token": "x" * 43}).status_code == 403
    assert served.call("GET", "/api/state", auth=False,
                       headers={"Authorization": f"Bearer {server.token}"}).status_code == 403
    in_url = served.call("POST", f"/api/decisions?token={server.token}", auth=False, json=_accept(served))
    assert in_url.status_code == 403  # a token in the URL logs in on GET only


@pytest.mark.parametrize(("method", "path"), [("GET", "/"), ("GET", "/api/state"), ("GET", "/api/metrics"),
                                              ("GET", "/review.js"), ("GET", "/no-such-route"),
                                              ("POST", "/api/decisions")])
def test_every_route_refuses_a_request_without_the_token(served, method, path):
    response = served.call(method, path, auth=False, json=_accept(served) if method == "POST" else None)
    assert response.status_code == 403 and "token" in response.json()["detail"]
    assert served.store.history(served.target.key) == []


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1", "127.0.0.1.evil.example:{port}",
                                  "localhost:{port}@evil.example"])
@pytest.mark.parametrize("path", ["/", "/api/state"])
def test_a_foreign_host_header_is_refused_even_with_the_token(served, host, path):
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 reaches the app as evil.example."""
    response = served.call("GET", path, headers={"Host": host.format(port=served.server.port)})
    assert response.status_code == 400 and "evil" not in response.text


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_the_loopback_names_with_the_port_are_accepted(served, host):
    assert served.call("GET", "/api/state", headers={"Host": host.format(port=served.server.port)}).status_code == 200


@pytest.mark.parametrize(("case", "auth", "headers"), [
    ("the issue's probe: Origin evil, no token", False, {"Origin": "http://evil.example"}),
    ("Origin evil with the token", True, {"Origin": "http://evil.example"}),
    ("Origin of another local port", True, {"Origin": "http://127.0.0.1:1"}),
    ("Origin null (a sandboxed frame)", True, {"Origin": "null"}),
    ("no XSRF header", True, {"X-XSRF-Token": None}),
    ("no XSRF cookie", True, {"Cookie": None}),
    ("XSRF header and cookie differ", True, {"X-XSRF-Token": "another-value-0123456789"}),
])
def test_a_write_without_its_own_origin_and_xsrf_pair_is_refused(served, case, auth, headers):
    response = served.call("POST", "/api/decisions", auth=auth, json=_accept(served), headers=headers)
    assert response.status_code == 403, case
    assert served.store.history(served.target.key) == []


def test_a_write_from_the_apps_own_origin_with_the_xsrf_pair_is_stored(served):
    origin = f"http://127.0.0.1:{served.server.port}"
    assert served.call("POST", "/api/decisions", json=_accept(served), headers={"Origin": origin}).status_code == 200
    assert [d.decision for d in served.store.history(served.target.key)] == ["accept"]


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_write_that_is_not_declared_json_is_refused(served, content_type):
    """The 'simple' requests a cross-site form or fetch can send without a preflight (FastAPI < 0.132 took them)."""
    response = served.call("POST", "/api/decisions", content=json.dumps(_accept(served)).encode(),
                           headers={"Content-Type": content_type})
    assert response.status_code == 415
    assert served.store.history(served.target.key) == []


def _chunked(marker: bytes, total: int):
    sent = 0
    while sent < total:
        yield marker * 1000
        sent += len(marker) * 1000


@pytest.mark.parametrize("case", ["declared over the limit", "chunked, no Content-Length",
                                  "a text/plain simple request"])
def test_an_oversized_body_is_refused_and_never_echoed(served, case):
    big = b'{"reason": "' + b"MARKER" * (LIMITS.body_bytes // 2) + b'"}'
    content, content_type = {"declared over the limit": (big, "application/json"),
                             "chunked, no Content-Length": (_chunked(b"MARKER", 3 * LIMITS.body_bytes),
                                                            "application/json"),
                             "a text/plain simple request": (big, "text/plain")}[case]
    response = served.call("POST", "/api/decisions", content=content, headers={"Content-Type": content_type})
    if case.startswith("chunked"):
        assert "content-length" not in response.request.headers
    assert response.status_code == (415 if "text/plain" in case else 413), case
    assert len(response.content) < 500 and b"MARKER" not in response.content
    assert served.store.history(served.target.key) == []


def test_a_body_at_the_limit_is_read_and_one_byte_more_is_not(served):
    body = json.dumps(_accept(served)).encode()
    padded = body + b" " * (LIMITS.body_bytes - len(body))  # JSON allows trailing whitespace
    assert served.call("POST", "/api/decisions", content=padded,
                       headers={"Content-Type": "application/json"}).status_code == 200
    assert served.call("POST", "/api/decisions", content=padded + b" ",
                       headers={"Content-Type": "application/json"}).status_code == 413


BAD_BODIES = [
    ("reason a number", {"reason": 5}, None),
    ("reason an object", {"reason": {}}, None),
    ("revised_claim a number, not stored as '123'", {"decision": "revise", "revised_claim": 123}, None),
    ("reason over the limit", {"decision": "reject", "reason": "MARKER" * (LIMITS.reason_chars // 6 + 1)}, None),
    ("revised_claim over the limit", {"decision": "revise", "revised_claim": "M" * (LIMITS.claim_chars + 1)}, None),
    ("reviewer over the limit", {"reviewer": "M" * (LIMITS.name_chars + 1)}, None),
    ("an unknown field", {"run_key": "another run"}, None),
    ("an unknown decision", {"decision": "maybe"}, None),
    ("an unknown label", {"decision": "reject", "reason": "x", "revised_label": "false"}, None),
    ("a lone surrogate", None, b'{"decision": "reject", "reason": "MARKER \\ud800"}'),
    ("invalid UTF-8", None, b'{"decision": "reject", "reason": "MARKER \xff"}'),
    ("deep nesting", None, b'{"reason": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"),
    ("not an object", None, b'["MARKER"]'),
    ("not JSON", None, b"MARKER"),
]


@pytest.mark.parametrize(("case", "fields", "raw"), BAD_BODIES, ids=[row[0] for row in BAD_BODIES])
def test_a_bad_decision_body_gets_422_without_its_input(served, case, fields, raw):
    content = raw if raw is not None else json.dumps(_accept(served, **fields)).encode()
    response = served.call("POST", "/api/decisions", content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, case
    errors = response.json()["detail"]
    assert errors and all(set(e) == {"loc", "msg", "type"} for e in errors)
    assert b"MARKER" not in response.content and (b"123" not in response.content or "123" not in case)
    assert served.store.history(served.target.key) == []


def test_a_revised_claim_is_stored_as_the_text_sent(served):
    body = _accept(served, decision="revise", revised_claim="123", reason="only the number")
    assert served.call("POST", "/api/decisions", json=body).json()["revised_claim"] == "123"


class _Scripts(HTMLParser):
    """The <script> elements of a page as (attributes, text), as a browser's tokenizer splits them."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data):
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


@pytest.mark.parametrize("reason", ["<!--<script>", "</script><script>alert(1)</script>",
                                    "a & b \u2028 c \u2029 </SCRIPT >"])
def test_a_reason_cannot_break_the_pages_embedded_json(served, reason):
    body = _accept(served, decision="reject", reason=reason)
    assert served.call("POST", "/api/decisions", json=body).status_code == 200
    parser = _Scripts()
    parser.feed(served.call("GET", "/").text)
    ids = [attrs.get("id") for attrs, _ in parser.scripts]
    assert "review-state" in ids and ids[-1] is None, "the review script follows the state, intact"
    state = json.loads(parser.scripts[ids.index("review-state")][1])
    assert [d["reason"] for d in state["decisions"].values()] == [reason]
    assert "accept" in parser.scripts[-1][1] and "review-tools" in parser.scripts[-1][1]
    raw = parser.scripts[ids.index("review-state")][1]
    assert not any(ch in raw for ch in "<>&\u2028\u2029")


RESPONSES = [
    ("page", "GET", "/", {}, 200), ("state", "GET", "/api/state", {}, 200),
    ("no route", "GET", "/no-such-route", {}, 404), ("no token", "GET", "/", {"auth": False}, 403),
    ("foreign host", "GET", "/", {"headers": {"Host": "evil.example"}}, 400),
    ("not JSON", "POST", "/api/decisions", {"content": b"{}", "headers": {"Content-Type": "text/plain"}}, 415),
    ("bad body", "POST", "/api/decisions", {"content": b"[]", "headers": {"Content-Type": "application/json"}}, 422),
    ("too large", "POST", "/api/decisions", {"content": b" " * (LIMITS.body_bytes + 1),
                                             "headers": {"Content-Type": "application/json"}}, 413),
]


@pytest.mark.parametrize(("case", "method", "path", "kwargs", "status"), RESPONSES, ids=[r[0] for r in RESPONSES])
def test_every_response_forbids_framing_and_sniffing(served, case, method, path, kwargs, status):
    response = served.call(method, path, **kwargs)
    assert response.status_code == status
    for name, value in FRAME_HEADERS.items():
        assert value in response.headers.get(name, ""), name


def test_the_login_redirect_forbids_framing_too(served):
    response = served.call("GET", f"/?token={served.server.token}", auth=False)
    assert response.status_code == 303 and response.headers["x-frame-options"] == "SAMEORIGIN"


LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_store_locked_by_another_process_answers_503_with_retry_after(review_cfg, serving):
    review_cfg.db_timeout_s = 0.2
    target, store = target_and_store(review_cfg)
    assert compose_config("review", ["run=x"]).db_timeout_s <= 5  # the default: seconds, not SQLite's 30 s habit
    with BackgroundServer(build_app(target, store, "tester")) as server:
        locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(store.path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert locker.stdout.readline().strip() == "locked"
            served = serving(server, target, store)
            for method, path, kwargs in [("GET", "/api/state", {}), ("POST", "/api/decisions", {"json": _accept(
                    served)}), ("GET", "/api/metrics", {})]:
                busy = served.call(method, path, **kwargs)
                assert busy.status_code == 503 and busy.headers["retry-after"].isdigit(), path
                assert str(store.path) in busy.json()["detail"] and "locked" in busy.json()["detail"]
            page = served.call("GET", "/")
            assert page.status_code == 503 and "locked" in page.text and page.headers["retry-after"]
        finally:
            locker.communicate("", timeout=30)
        assert served.call("POST", "/api/decisions", json=_accept(served)).status_code == 200


def test_a_store_deleted_while_serving_is_recreated_and_says_so(served, caplog):
    assert served.call("POST", "/api/decisions", json=_accept(served)).status_code == 200
    served.store.path.unlink()
    with caplog.at_level(logging.WARNING, logger="factlab.review.store"):
        assert served.call("GET", "/").status_code == 200
        state = served.call("GET", "/api/state").json()
    assert state["decisions"] == {} and served.store.path.exists()
    assert str(served.store.path) in caplog.text
    assert served.call("POST", "/api/decisions", json=_accept(served)).status_code == 200


def test_a_restart_that_finds_no_store_says_so(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="factlab.review.store"):
        DecisionStore(tmp_path / "gone" / "decisions.sqlite")
    assert "no decision store at" in caplog.text and "gone" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="factlab.review.store"):
        DecisionStore(tmp_path / "gone" / "decisions.sqlite")  # now it exists: nothing to say
    assert caplog.text == ""


def test_the_current_decisions_read_one_row_per_card_however_long_the_history(tmp_path, monkeypatch):
    import factlab.review.store as store_module

    store = DecisionStore(tmp_path / "d.sqlite")
    for i in range(50):
        store.record(Decision("r", "p1", "c1", "v1", "reject", reason=f"try {i}"))
    store.record(Decision("r", "p1", "c2", "v1", "accept"))
    built = []
    monkeypatch.setattr(store_module, "Decision", lambda **row: built.append(row) or Decision(**row))
    current = store.current("r")
    assert current[("p1", "c1")].reason == "try 49" and current[("p1", "c2")].decision == "accept"
    assert len(built) == 2  # not 51: /api/state does not re-read the history


def test_the_default_limits_are_the_configs():
    assert Limits(**compose_config("review", ["run=x"]).limits) == LIMITS


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.org"])
def test_a_non_loopback_host_is_refused_without_the_flag(review_cfg, host):
    review_cfg.host = host
    target, store = target_and_store(review_cfg)
    with pytest.raises(ReviewAccessError, match="allow_remote=true"):
        launch(review_cfg, target, store)


def test_allow_remote_warns_loudly_and_keeps_the_token(review_cfg, capsys):
    review_cfg.host, review_cfg.allow_remote = "0.0.0.0", True
    target, store = target_and_store(review_cfg)
    app, config, _ = launch(review_cfg, target, store)  # built, not bound
    err = capsys.readouterr().err
    assert "WARNING" in err and "other machines" in err and "token is still required" in err
    assert config.host == "0.0.0.0" and len(app.access.token) >= 16


def test_a_short_fixed_token_is_refused(review_cfg, monkeypatch):
    monkeypatch.setenv("FACTLAB_REVIEW_TOKEN", "short")
    target, store = target_and_store(review_cfg)
    with pytest.raises(ReviewAccessError, match="token"):
        launch(review_cfg, target, store)


def test_the_launch_prints_the_url_once_and_the_token_is_never_logged(review_cfg, serving, capfd, caplog):
    review_cfg.port = _free_port()
    target, store = target_and_store(review_cfg)
    caplog.set_level(logging.DEBUG)
    app, config, url = launch(review_cfg, target, store)
    token = app.access.token
    printed = capfd.readouterr().out
    assert printed.count(token) == 1 and f"{url}?token={token}" in printed
    assert config.access_log is False and token not in url
    with BackgroundServer(app, port=review_cfg.port, log_level="debug") as server:
        served = serving(server, target, store)
        with httpx.Client(base_url=server.base, timeout=30, follow_redirects=True) as browser:
            assert browser.get(f"/?token={token}").status_code == 200  # logged in, redirected, page served
        served.call("GET", "/api/state")
        served.call("POST", "/api/decisions", json=_accept(served))
        served.call("GET", f"/api/state?token={token}x", auth=False)
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]  # not the test's client
    assert server_side, "the debug-level server logged something (else this test checks nothing)"
    logged = "\n".join(r.getMessage() for r in server_side) + "".join(capfd.readouterr())
    assert token not in logged
    assert not list(store.path.parent.rglob("*.log"))
    assert token.encode() not in store.path.read_bytes()
