"""The doctests of the data layer's pure helpers run with the suite."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import factlab.data

MODULES = sorted(info.name for info in pkgutil.walk_packages(factlab.data.__path__, "factlab.data."))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
