"""Helpers shared by the reliability tests (a uniquely named module, not conftest, so imports cannot pick up another
folder's conftest): the red-team set of injected snippets."""

from __future__ import annotations

import json
from pathlib import Path

REDTEAM = Path(__file__).with_name("redteam.jsonl")


def redteam() -> list[dict]:
    """The red-team cases: claim, clean snippet, the same snippet with an injection, a fact that must survive."""
    return [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]
