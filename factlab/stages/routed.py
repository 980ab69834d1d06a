"""A stage with one program per vertical (e.g. a GEPA-compiled extract_claims per vertical): the vertical stage
classifies the input text, and the program compiled for that vertical answers; a vertical without one gets the shared
program. Built by the professional checker from `by_vertical.<stage>` (conf/checker/professional.yaml `routed`)."""

from __future__ import annotations

from collections.abc import Mapping

import dspy

from factlab.schema import StageName

# stage -> the input field whose text the vertical stage classifies, for the stages that can have a program per vertical
ROUTED_FIELDS = {StageName.EXTRACT_CLAIMS: "paragraph"}


class ByVertical(dspy.Module):
    """Route each call to `programs[vertical of the text]`, else to `shared`.

    Args:
        shared: the stage's program for every vertical without its own.
        programs: vertical -> program.
        classify: the vertical stage (called as `classify(claim=text)`, answering `.vertical`).
        text_field: the input field whose text is classified (extract_claims: "paragraph").

    >>> class Echo(dspy.Module):
    ...     def __init__(self, name): super().__init__(); self.name = name
    ...     def forward(self, paragraph, context): return dspy.Prediction(claims=[self.name])
    >>> class Vertical(dspy.Module):
    ...     def forward(self, claim): return dspy.Prediction(vertical="medical" if "drug" in claim else "sports")
    >>> routed = ByVertical(Echo("shared"), {"medical": Echo("medical")}, Vertical(), "paragraph")
    >>> routed(paragraph="A drug.", context="").claims, routed(paragraph="A match.", context="").claims
    (['medical'], ['shared'])
    >>> routed.last_vertical
    'sports'
    """

    def __init__(self, shared: dspy.Module, programs: Mapping[str, dspy.Module], classify: dspy.Module,
                 text_field: str) -> None:
        super().__init__()
        self.shared = shared
        self.programs = dict(programs)
        self.classify = classify
        self.text_field = text_field
        self.last_vertical: str | None = None

    def forward(self, **inputs) -> dspy.Prediction:
        vertical = str(self.classify(claim=inputs[self.text_field]).vertical)
        self.last_vertical = vertical
        return self.programs.get(vertical, self.shared)(**inputs)
