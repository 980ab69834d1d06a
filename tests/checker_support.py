"""Checkers built from parts in tests, with the parts' settings as keyword arguments (what conf/checker/*.yaml builds
in one instantiate call)."""

from __future__ import annotations

from factlab.checkers.fast import FastChecker
from factlab.checkers.layers import DocumentLayers
from factlab.checkers.professional import ProfessionalChecker
from factlab.checkers.verdict import Verdict

_VERDICT = ("consistency", "verticals", "timeliness")
_LAYERS = {"routing": "routing", "typer": "typer", "logic": "logic", "document_checks": "checks"}


def _parts(rules, options: dict) -> tuple[Verdict, DocumentLayers, list | None]:
    verdict = Verdict(rules, **{k: options.pop(k) for k in _VERDICT if k in options})
    layers = DocumentLayers(**{_LAYERS[k]: options.pop(k) for k in list(_LAYERS) if k in options})
    return verdict, layers, options.pop("sources", None)


def professional(stages, retriever, rules, student=None, **options) -> ProfessionalChecker:
    """A professional checker; `agent` / `agent_when` name the multi-round settings, `sources` overrides the index's."""
    verdict, layers, sources = _parts(rules, options)
    if "agent" in options:
        options["multi_round"] = options.pop("agent")
        options["multi_round_when"] = options.pop("agent_when", ("unverifiable",))
    checker = ProfessionalChecker(stages, retriever, verdict, layers, student=student, **options)
    if sources is not None:
        checker.parts.sources = list(sources)
    return checker


def fast(stages, retriever, rules, **options) -> FastChecker:
    verdict, layers, sources = _parts(rules, options)
    checker = FastChecker(stages, retriever, verdict, layers, **options)
    if sources is not None:
        checker.parts.sources = list(sources)
    return checker


def route(checker, text: str) -> tuple[str, list[str]]:
    """(paragraph type, layers) the checker's document layers give a paragraph."""
    return checker.parts.layers.route(text, checker.meter, checker.parts.business)
