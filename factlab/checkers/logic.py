"""The logic layer of a checker (conf/logic/*.yaml): a paragraph's reasoning against its own premises and those of
the paragraphs before it, on the rule path (`factlab.rules.logic.LogicRules`, no LM) or on the LM stage `logic`
(`factlab.programs.logic.LogicChecker`, given the paragraphs before it: `earlier_text`); with `strength` set, the
causal-strength model adds a `causal_overclaim` where the engine found none (`factlab.checkers.strength`), and with
`scope` set the scope model adds a `scope_shift` likewise (`factlab.checkers.scope`).

>>> layer = LogicLayer(LogicRules())
>>> [i.kind for i in layer.check(["A survey linked tea to calm.", "Tea therefore causes calm."], 1)]
['causal_overclaim']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from factlab.checkers.scope import ScopeShift
from factlab.checkers.strength import StrengthOverclaim
from factlab.programs.logic import SOUND, earlier_text
from factlab.rules.logic import LogicIssue, LogicRules
from factlab.schema import StageName


def issues_of(pred, paragraph: str) -> list[LogicIssue]:
    """The stage's answer as the layer's issues (none when sound); a keyword the paragraph does not hold is dropped
    (the card must point at real text)."""
    if getattr(pred, "verdict", SOUND) == SOUND:
        return []
    keyword = pred.keyword if pred.keyword and pred.keyword in paragraph else ""
    return [LogicIssue(pred.verdict, keyword, pred.reason or "")]


class LogicLayer:
    """The layer's engine: `rules` when `stage` is None, else the stage program (called through `call`, the
    pipeline's per-stage meter, so its LM calls are counted)."""

    def __init__(self, rules: LogicRules, stage: Callable | None = None, context_chars: int = 600,
                 strength: StrengthOverclaim | None = None, scope: ScopeShift | None = None) -> None:
        self.rules, self.stage, self.context_chars = rules, stage, int(context_chars)
        self.strength = strength  # the causal-strength model path (factlab/checkers/strength.py); None = off
        self.scope = scope  # the scope model path (factlab/checkers/scope.py); None = off

    @property
    def engine(self) -> str:
        return "rules" if self.stage is None else "stage"

    def check(self, paragraphs: Sequence[str], index: int,
              call: Callable[..., Any] | None = None) -> list[LogicIssue]:
        """The findings of paragraph `index` given the ones before it."""
        text, earlier = paragraphs[index], list(paragraphs[:index])
        if self.stage is None:
            issues = self.rules.check_paragraph(text, earlier)
        else:
            inputs = {"paragraph": text, "earlier": earlier_text(earlier, self.context_chars)}
            pred = call(StageName.LOGIC, self.stage, **inputs) if call is not None else self.stage(**inputs)
            issues = issues_of(pred, text)
        if self.strength is not None and not any(i.kind == "causal_overclaim" for i in issues):
            issues += self.strength.check(paragraphs, index)  # the model's reading where the engine found none
        if self.scope is not None and not any(i.kind in ("scope_shift", "carried_over") for i in issues):
            issues += self.scope.check(paragraphs, index)
        return issues
