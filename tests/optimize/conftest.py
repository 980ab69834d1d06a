"""Fixtures of the optimizer tests: optimize_fakes importable (for Hydra's _target_) and a clean fake-LM log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # optimize_fakes, for Hydra's _target_

from optimize_fakes import ENGINE_CALLS, INTERRUPT  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_engine_log():
    ENGINE_CALLS.clear()
    INTERRUPT["after"] = None
    yield
    ENGINE_CALLS.clear()
    INTERRUPT["after"] = None
