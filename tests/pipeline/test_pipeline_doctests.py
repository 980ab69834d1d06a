"""Run the doctests of the pipeline output modules as part of the ordinary test run."""

import doctest

import pytest

import factlab.cards.model
import factlab.report.html


@pytest.mark.parametrize(
    "module", [factlab.cards.model, factlab.report.html], ids=lambda m: m.__name__
)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{module.__name__} has no doctests"
    assert result.failed == 0
