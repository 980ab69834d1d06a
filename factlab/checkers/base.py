"""The interface every checker answers (fast, professional, funnel; nearline runs one of them per worker).

A checker is built from its config node (conf/checker/<name>.yaml, `_target_` + nested parts) in one
`hydra.utils.instantiate` call at the job's edge; after that it holds built objects only, never config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from factlab.cards.model import Report
from factlab.pipeline.meter import StageMeter
from factlab.pipeline.trace import ClaimTrace, DocumentTrace


@runtime_checkable
class Checker(Protocol):
    """Check documents; `run` keeps the trace evaluate.py scores and attributes, `check` only the report.

    Attributes:
        name: the checker's name on every card and report (`card.checker`, `summary["checker"]`).
        retriever: the evidence search (its `issues` are the sources that could not be read).
        stages: stage name -> built stage (what `fixed=` can replace and evaluate.py re-runs).
        meter: per-stage calls, seconds and tokens.
        cache: the claim cache, or None.
    """

    name: str
    retriever: Any
    stages: Mapping[str, Any]
    meter: StageMeter
    cache: Any

    def run(self, document: str, name: str = "document", fixed: Mapping[str, Any] | None = None) -> DocumentTrace:
        """Check one document; `fixed[stage]` replaces a stage's output with gold (the rest runs)."""

    def check(self, document: str, name: str = "document") -> Report:
        """Check one document, return its report."""

    def process_claim(self, trace: ClaimTrace, fixed: Mapping[str, Any] | None = None) -> ClaimTrace:
        """Check one claim (evaluate.py's attribution re-runs claims with a stage fixed)."""
