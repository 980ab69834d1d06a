"""Fixtures of the knowledge tests (helpers in knowledge_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from knowledge_support import build_zotero

from factlab.knowledge.cli import main


@pytest.fixture
def zotero_db(tmp_path) -> Path:
    """The path of a freshly built zotero.sqlite (its data directory is its parent)."""
    return build_zotero(tmp_path / "Zotero")


@pytest.fixture
def imported(zotero_db, tmp_path, capsys) -> Path:
    """The import folder of the test library (abstracts only: the article and the preprint become sources)."""
    out = tmp_path / "kb"
    assert main(["import", "--zotero", str(zotero_db), "--out", str(out)]) == 0
    capsys.readouterr()
    return out
