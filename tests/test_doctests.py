"""Run the doctests of every factlab module (pure helpers document themselves with examples)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import factlab

MODULES = sorted(m.name for m in pkgutil.walk_packages(factlab.__path__, "factlab.") if not m.ispkg)


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} doctest(s) failed"
