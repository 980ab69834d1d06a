"""Fixtures of the knowledge tests (helpers in knowledge_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from knowledge_support import build_zotero


@pytest.fixture
def zotero_db(tmp_path) -> Path:
    """The path of a freshly built zotero.sqlite (its data directory is its parent)."""
    return build_zotero(tmp_path / "Zotero")
