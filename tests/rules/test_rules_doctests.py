"""Run the doctests of the rules modules as part of the ordinary test run."""

import doctest

import pytest

import factlab.rules.business
import factlab.rules.citations


@pytest.mark.parametrize("module", [factlab.rules.business, factlab.rules.citations], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{module.__name__} has no doctests"
    assert result.failed == 0
