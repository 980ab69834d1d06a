"""Turn LM failures into per-item error values a caller can show, instead of sinking a whole document; stop calling
an LM server that is down (one health probe, then every call fails at once); never replay an unparsable answer from
DSPy's disk cache; and never let a secret reach an error message.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from factlab.secrets import register_secret, scrub  # noqa: F401 - re-exported: the LM backends register here

_REFUSAL = re.compile(r"\b(I('| a)m sorry|I cannot|I can't|as an AI)\b|抱歉|无法(回答|提供)", re.IGNORECASE)
INFRA_KINDS = ("connection", "timeout")  # failures of the server, not of the item


@dataclass
class StageError:
    """Why a stage produced no output for one item."""

    stage: str
    kind: str  # timeout | refusal | parse | connection | other
    message: str

    def __str__(self) -> str:
        return f"{self.stage}: {self.kind}: {self.message}"


class LMUnavailableError(ConnectionError):
    """The LM server is down: its health probe failed after a call did; the call was not made."""


def classify_exception(stage: str, exc: BaseException) -> StageError:
    """Name the failure: an LM timeout, a refusal, unparseable output, a dead server, or something else. The message
    is scrubbed of secrets."""
    name = type(exc).__name__
    text = str(exc)
    response = str(getattr(exc, "lm_response", "") or "")
    if isinstance(exc, LMUnavailableError):
        kind = "connection"
    elif "Timeout" in name or "timed out" in text.lower():
        kind = "timeout"
    elif name == "AdapterParseError" or "parse" in text.lower():
        kind = "refusal" if _REFUSAL.search(response or text) else "parse"
    elif "Connection" in name or "connection" in text.lower():
        kind = "connection"
    else:
        kind = "other"
    detail = text.splitlines()[0][:300] if text else name
    if response:
        detail += f" | LM said: {response[:200]!r}"
    return StageError(stage, kind, scrub(detail))


class LMBreaker:
    """A circuit breaker for one LM server: after a call fails for an infrastructure reason (timeout, connection),
    one quick health probe decides whether the server is down; if it is, every later call fails at once with
    `LMUnavailableError` instead of paying timeout x retries again.

    Args:
        api_base: the server's OpenAI-compatible base URL (`.../v1`).
        probe_timeout_s: how long the health probe may take.
        probe: a replacement probe (a local server's: its process and port); default GET <api_base>/models, any
            HTTP answer counts as alive.
        probe_failed: what a failed probe means, for the message (default: the HTTP probe's).
    """

    def __init__(self, api_base: str, probe_timeout_s: float = 5.0, probe: Callable[[], bool] | None = None,
                 probe_failed: str | None = None) -> None:
        self.api_base = api_base
        self.probe_timeout_s = probe_timeout_s
        self._probe = probe or self._http_probe
        self.probe_failed = probe_failed or f"the health probe got no answer within {probe_timeout_s:g} s"
        self._lock = threading.Lock()
        self.down: str | None = None  # why the server counts as down; None while it is up
        self.probes = 0

    def _http_probe(self) -> bool:
        import httpx

        try:
            httpx.get(f"{self.api_base.rstrip('/')}/models", timeout=self.probe_timeout_s)
        except httpx.HTTPError:
            return False
        return True

    def check(self) -> None:
        """Raise LMUnavailableError when the server is known to be down."""
        if self.down is not None:
            raise LMUnavailableError(self.down)

    def record(self, error: StageError) -> None:
        """After a failed call: probe the server once when the failure was the server's."""
        if error.kind not in INFRA_KINDS or self.down is not None:
            return
        with self._lock:
            if self.down is None:
                self.probes += 1
                if not self._probe():
                    self.down = (f"LM server {self.api_base} is down (a call failed: {error.kind}; "
                                 f"{self.probe_failed}); not calling it again this run")


def note_failure(stage: str, exc: BaseException, breaker: LMBreaker | None = None) -> StageError:
    """Classify a failed stage call and act on it: trip the breaker on a dead server, and drop an answer that failed
    to parse from DSPy's disk cache (so the rerun the card advises asks the LM again)."""
    error = classify_exception(stage, exc)
    if breaker is not None:
        breaker.record(error)
    if error.kind in ("parse", "refusal"):
        from factlab.runtime import forget_last_lm_answer

        forget_last_lm_answer()
    return error


def call_safely(stage: str, fn: Callable[..., Any], breaker: LMBreaker | None = None,
                **kwargs) -> tuple[Any, StageError | None]:
    """Run one stage call; return (result, None) or (None, StageError). KeyboardInterrupt still propagates."""
    try:
        if breaker is not None:
            breaker.check()
        return fn(**kwargs), None
    except Exception as exc:  # one bad item must never sink the whole document
        return None, note_failure(stage, exc, breaker)
