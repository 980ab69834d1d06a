"""The layers beyond single claims, one part every checker is built with (conf/pipeline/default.yaml `layers`): the
routing table (which layers check which type of paragraph), the paragraph typer that keys it, the logic layer and the
consistency layer's document checks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from factlab.cards.build import layer_findings, logic_findings
from factlab.cards.model import ParagraphCard
from factlab.checkers.logic import LogicLayer
from factlab.models.errors import classify_exception
from factlab.pipeline.meter import StageMeter
from factlab.pipeline.trace import ParagraphTrace
from factlab.rules.document import consistency_findings
from factlab.rules.routing import Routing
from factlab.schema import StageName

logger = logging.getLogger(__name__)


class DocumentLayers:
    """The document-level layers of a checker.

    Args:
        routing: the paragraph-type routing table (`factlab.rules.routing.Routing`): a paragraph whose type has the
            facts layer off gets no fact check, and the consistency layer reports findings only in paragraphs routed
            to it; None = every layer on every paragraph.
        typer: the paragraph_type stage (program or classifier, `paragraph_typer=stage`): its type keys the routing
            table instead of the table's patterns (which answer when it fails); None = the patterns.
        logic: the logic layer (`factlab.checkers.logic.LogicLayer`, conf/logic): paragraphs routed to it get logic
            findings; None = the layer is off.
        checks: the consistency layer's checks (`factlab.rules.document.KINDS`); empty = the layer is off.
    """

    def __init__(self, routing: Routing | None = None, typer: Callable | None = None, logic: LogicLayer | None = None,
                 checks: Sequence[str] = ()) -> None:
        self.routing, self.typer, self.logic, self.checks = routing, typer, logic, tuple(checks)

    def uses_lm(self) -> bool:
        """Whether a layer runs an LM program (the logic stage, or the typer's program backend)."""
        stages = [self.typer, self.logic.stage if self.logic is not None else None]
        return any(s is not None and getattr(s, "backend", "program") == "program" for s in stages)

    def route(self, text: str, meter: StageMeter, business: str) -> tuple[str, list[str]]:
        """(paragraph type, the layers that check it): facts, and logic / consistency when that layer is on."""
        typed = None
        if self.typer is not None and self.routing is not None:
            try:
                typed = str(meter.call(StageName.PARAGRAPH_TYPE, self.typer, paragraph=text).paragraph_type)
            except Exception as exc:  # the table's patterns answer instead
                logger.warning("paragraph_type failed, the routing patterns decide: %s",
                               classify_exception(StageName.PARAGRAPH_TYPE, exc))
        kind, layers = (self.routing.layers_for(text, paragraph_type=typed, business=business) if self.routing
                        else ("", ["facts", "logic", "consistency"]))
        on = {"facts": True, "logic": self.logic is not None, "consistency": bool(self.checks)}
        return kind, [layer for layer in layers if on[layer]]

    def check_logic(self, unit: ParagraphTrace, texts: list[str], index: int, meter: StageMeter) -> None:
        """The logic layer on one paragraph; a failed check (the LM down, an unparsable answer) leaves the paragraph
        without the layer (its card does not list it) and is logged, never raised."""
        try:
            unit.logic = self.logic.check(texts, index, call=meter.call)
        except Exception as exc:
            logger.warning("logic layer failed on paragraph %d: %s", index + 1,
                           classify_exception(StageName.LOGIC, exc))
            unit.layers = [layer for layer in unit.layers if layer != "logic"]

    def findings(self, cards: list[ParagraphCard], units: list[ParagraphTrace]) -> list:
        """The document's logic and consistency findings; the whole document is compared, findings are shown where
        the consistency layer is routed."""
        found = []
        if self.checks:
            routed = {c.paragraph_id for c in cards if "consistency" in c.layers}
            compared = consistency_findings([(c.paragraph_id, c.text) for c in cards], self.checks)
            found = layer_findings([f for f in compared if f.paragraph_id in routed])
        ids = [c.paragraph_id for c in cards]
        return [*logic_findings(ids, [unit.logic for unit in units]), *found]
