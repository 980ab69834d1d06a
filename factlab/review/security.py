"""The review app's trust boundary, drawn as Jupyter's server draws it (an ASGI middleware around the whole app, so no
route, asset or error page is outside it):

    every request   the Host header names this app (loopback or an allowed host, with the server's port), else 400:
                    a DNS-rebound page reaches the app under its own name; an Origin header, when sent, is the app's
                    own origin, else 403; authenticated, else 403: the launch token once in the query (answered with
                    an HttpOnly, SameSite=Strict session cookie and a redirect to the URL without it), then that
                    cookie, or the token in an `Authorization: token <token>` or `X-Factlab-Token` header
    every write     (any method but GET and HEAD) an `X-XSRF-Token` header equal to the `_xsrf` cookie (set by every
                    GET), else 403; a JSON Content-Type, else 415; a body of at most `Limits.body_bytes`, counted while
                    it is read (a chunked body has no Content-Length), else 413 and the rest is never read
    every response  `Content-Security-Policy: frame-ancestors 'self'`, `X-Frame-Options: SAMEORIGIN`, nosniff, no
                    referrer, no caching

Refusals are short JSON bodies that never repeat what was sent. The token is compared in constant time and never
logged, printed (but once, by review.py's launch) or written anywhere.
"""

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD"})
XSRF_COOKIE = "_xsrf"
XSRF_HEADER = "x-xsrf-token"
TOKEN_HEADER = "x-factlab-token"
MIN_TOKEN_CHARS = 16
SECURITY_HEADERS = (
    ("content-security-policy", "frame-ancestors 'self'; base-uri 'none'; object-src 'none'"),
    ("x-frame-options", "SAMEORIGIN"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
)


class ReviewAccessError(ValueError):
    """A review app setting that would open it wider than meant (a short token, a non-loopback host without the
    flag); the message names the setting and the fix."""


def new_token() -> str:
    """A fresh launch token: 32 random bytes, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Limits:
    """Request size limits (conf/review.yaml `limits`; the defaults here are the same numbers)."""

    body_bytes: int = 65536  # a request body, counted while read
    reason_chars: int = 4000  # a decision's reason
    claim_chars: int = 2000  # a revised claim
    name_chars: int = 200  # reviewer, paragraph / claim id, card version


@dataclass(frozen=True)
class Access:
    """Who may talk to the app: the launch token, and the Host names accepted besides loopback ("*" = any)."""

    token: str = field(default_factory=new_token, repr=False)
    hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.token) < MIN_TOKEN_CHARS:
            raise ReviewAccessError(f"token: {len(self.token)} characters, expected at least {MIN_TOKEN_CHARS} "
                                    "(unset FACTLAB_REVIEW_TOKEN for a random one per launch)")


def is_loopback(host: str) -> bool:
    """Whether a bind address only listens on this machine.

    >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0", "192.168.1.4", "example.org")]
    [True, True, True, True, False, False, False]
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """A host as it appears in a Host header, lowercased (an IPv6 address in brackets).

    >>> host_name("::1"), host_name("LocalHost"), host_name("[::1]")
    ('[::1]', 'localhost', '[::1]')
    """
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def split_host(header: str) -> tuple[str, int | None] | None:
    """A Host header as (name, port or None); None when malformed.

    >>> split_host("127.0.0.1:8765"), split_host("[::1]:80"), split_host("Evil.example"), split_host("a:b")
    (('127.0.0.1', 8765), ('[::1]', 80), ('evil.example', None), None)
    """
    header = header.strip().lower()
    if header.startswith("["):
        name, bracket, rest = header.partition("]")
        name, (sep, port) = name + bracket, (rest[:1], rest[1:])
        if rest and sep != ":":
            return None
    else:
        name, sep, port = header.partition(":")
    if not name or (sep and not port.isdigit()):
        return None
    return name, int(port) if port else None


class Guard:
    """The ASGI middleware that enforces the module's rules around `app`.

    Args:
        app: the ASGI app (the FastAPI review app).
        access: the launch token and the extra allowed Host names.
        limits: the request size limits.
    """

    def __init__(self, app, access: Access, limits: Limits) -> None:
        self.app, self.access, self.limits = app, access, limits
        self.session = secrets.token_urlsafe(32)  # the cookie's value: the token itself never leaves the launch line
        self.hosts = {host_name(h) for h in (*LOOPBACK_HOSTS, *access.hosts)}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the app has no websockets
            await send({"type": "websocket.close", "code": 1008})
            return
        request = Request(scope)
        send = self._with_headers(send, set_xsrf=scope["method"] in SAFE_METHODS
                                  and not request.cookies.get(XSRF_COOKIE))
        host = request.headers.get("host", "")
        if not self._host_allowed(host, scope.get("server")):
            allowed = ", ".join(sorted(self.hosts))
            return await _refuse(400, f"Host not allowed: open the app as one of {allowed} with the server's port "
                                      "(more hosts: allowed_hosts in conf/review.yaml)", scope, receive, send)
        origin = request.headers.get("origin")
        if origin is not None and origin.lower() != f"{scope.get('scheme', 'http')}://{host}".lower():
            return await _refuse(403, "cross-origin request refused: the Origin is not this app's", scope, receive,
                                 send)
        if "token" in request.query_params:
            if scope["method"] in SAFE_METHODS and self._token_ok(request.query_params["token"]):
                return await self._login(request, scope, receive, send)
            return await _refuse(403, "wrong token (a token in the URL is accepted on GET only)", scope, receive,
                                 send)
        if not self._authenticated(request):
            return await _refuse(403, "this review app needs its launch token: open the URL review.py printed "
                                      "(…/?token=…), or send `Authorization: token <token>` or `X-Factlab-Token`",
                                 scope, receive, send)
        if scope["method"] not in SAFE_METHODS:
            cookie, header = request.cookies.get(XSRF_COOKIE, ""), request.headers.get(XSRF_HEADER, "")
            if not (cookie and header and hmac.compare_digest(cookie.encode(), header.encode())):
                return await _refuse(403, f"missing or wrong {XSRF_HEADER} header: send the `{XSRF_COOKIE}` cookie's "
                                          "value (reload the page to get one)", scope, receive, send)
            media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if media_type != "application/json":
                return await _refuse(415, "a write must be JSON: Content-Type: application/json", scope, receive,
                                     send)
            body = await self._read_body(request, receive)
            if body is None:
                return await _refuse(413, f"request body over {self.limits.body_bytes} bytes (limits.body_bytes in "
                                          "conf/review.yaml)", scope, receive, send)
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _host_allowed(self, header: str, server: tuple[str, int] | None) -> bool:
        if "*" in self.hosts:
            return True
        parsed = split_host(header)
        if parsed is None or parsed[0] not in self.hosts:
            return False
        port, server_port = parsed[1], server[1] if server else None
        return server_port is None or port == server_port or (port is None and server_port == 80)

    def _token_ok(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode(), self.access.token.encode())

    def _authenticated(self, request: Request) -> bool:
        cookie = request.cookies.get(self._cookie_name(request.scope))
        if cookie and hmac.compare_digest(cookie.encode(), self.session.encode()):
            return True
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "token" and self._token_ok(value.strip()):
            return True
        return self._token_ok(request.headers.get(TOKEN_HEADER, "")) if TOKEN_HEADER in request.headers else False

    def _cookie_name(self, scope) -> str:
        server = scope.get("server")
        return f"factlab-review-{server[1] if server else 0}"  # per port: two apps on one host keep their sessions

    async def _login(self, request: Request, scope, receive, send) -> None:
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        clean = "/" + request.url.path.lstrip("/") + (f"?{urlencode(query)}" if query else "")  # never "//host"
        response = RedirectResponse(clean, status_code=303)
        response.set_cookie(self._cookie_name(scope), self.session, httponly=True, samesite="strict", path="/")
        await response(scope, receive, send)

    async def _read_body(self, request: Request, receive) -> bytes | None:
        """The whole body, or None as soon as it passes the limit (declared or counted); the rest is not read."""
        limit = self.limits.body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    def _with_headers(self, send, set_xsrf: bool):
        async def secured(message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS if k.encode() not in present]
                if set_xsrf:
                    headers.append((b"set-cookie", f"{XSRF_COOKIE}={secrets.token_urlsafe(32)}; Path=/; "
                                                   "SameSite=Strict".encode()))
                message = {**message, "headers": headers}
            await send(message)

        return secured


async def _refuse(status: int, detail: str, scope, receive, send) -> None:
    await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)


def _replay(body: bytes, receive):
    """A `receive` that hands the app the already read body, then the connection's own messages."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
