"""Run the doctests of the card and report modules as part of the ordinary test run."""

import doctest

import pytest

import factlab.cards.actions
import factlab.cards.build
import factlab.cards.html
import factlab.cards.model

MODULES = [factlab.cards.actions, factlab.cards.build, factlab.cards.model, factlab.cards.html]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{module.__name__} has no doctests"
    assert result.failed == 0
