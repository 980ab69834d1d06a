"""Turn LM failures into per-item error values a caller can show, instead of sinking a whole document."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_REFUSAL = re.compile(r"\b(I('| a)m sorry|I cannot|I can't|as an AI)\b|抱歉|无法(回答|提供)", re.IGNORECASE)


@dataclass
class StageError:
    """Why a stage produced no output for one item."""

    stage: str
    kind: str  # timeout | refusal | parse | connection | other
    message: str

    def __str__(self) -> str:
        return f"{self.stage}: {self.kind}: {self.message}"


def classify_exception(stage: str, exc: BaseException) -> StageError:
    """Name the failure: an LM timeout, a refusal, unparseable output, a dead server, or something else."""
    name = type(exc).__name__
    text = str(exc)
    response = str(getattr(exc, "lm_response", "") or "")
    if "Timeout" in name or "timed out" in text.lower():
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
    return StageError(stage, kind, detail)


def call_safely(stage: str, fn: Callable[..., Any], **kwargs) -> tuple[Any, StageError | None]:
    """Run one stage call; return (result, None) or (None, StageError). KeyboardInterrupt still propagates."""
    try:
        return fn(**kwargs), None
    except Exception as exc:  # one bad item must never sink the whole document
        return None, classify_exception(stage, exc)
