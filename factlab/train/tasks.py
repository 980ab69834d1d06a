"""What a distilled stage learns: its rows (program inputs + model text + gold) and how a program output maps to a
training target. One task per trainable stage; the recipes in factlab/train/recipes.py pick theirs.

A classifier task reads rows from the data views (`factlab.data.views`) and names its labels; an SFT task reads the
stage's own examples (`factlab.stages.examples`) whose target is a list of strings, which factlab/train/sft/causal_lm.py
renders as chat turns with the serving LM's DSPy adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from factlab.data import views
from factlab.data.loaders.causal_strength import STRENGTHS
from factlab.data.loaders.scope import SCOPES
from factlab.programs.checkworthy import CLASSIFIER_LABELS as CHECKWORTHY_LABELS
from factlab.programs.paragraph_type import CLASSIFIER_LABELS as PARAGRAPH_TYPES
from factlab.schema import RELATIONS, normalise_relation
from factlab.stages.examples import stage_examples


@dataclass(frozen=True)
class Row:
    """One training / evaluation item.

    Attributes:
        inputs: the stage program's keyword inputs (what teacher=lm runs the program on).
        text: the model's first text; `pair` its optional second text (evidence for the judge).
        gold: the dataset's label (classifier) or target list (SFT); None when the data has none.
        lang, case_id: where it came from (per-language metrics, provenance).
    """

    inputs: dict
    text: str
    pair: str | None = None
    gold: object = None
    lang: str = ""
    case_id: str = ""
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ClassifierTask:
    """A stage distilled into a sequence classifier.

    Attributes:
        stage: the stage name (conf/stage/<stage>.yaml, factlab/programs/<stage>.py).
        labels: the classes, in the order of the model's outputs.
        rows: cases -> rows.
        target: the stage program's prediction -> one of `labels` (None when it gives none of them).
    """

    stage: str
    labels: tuple[str, ...]
    rows: Callable[[Iterable[dict]], list[Row]]
    target: Callable[[object], str | None]


@dataclass(frozen=True)
class SFTTask:
    """A stage distilled into a causal LM by supervised fine-tuning.

    Attributes:
        stage: the stage name.
        input_fields: the program inputs a row carries (other predictor inputs come from the program's settings).
        output_field: the predictor's output field the model learns to write (a list of strings).
        rows: cases -> rows whose `gold` is the target list (None when the data has none) and whose
            `meta["example"]` is the stage's dspy.Example (scored with the stage's `_score`).
        target: the stage program's prediction -> the target list (None when empty).
    """

    stage: str
    input_fields: tuple[str, ...]
    output_field: str
    rows: Callable[[Iterable[dict]], list[Row]]
    target: Callable[[object], list[str] | None]


def judge_rows(kinds: Sequence[str]) -> Callable[[Iterable[dict]], list[Row]]:
    """Claim + evidence rows of `relation_pairs` whose `kind` is in `kinds` ("evidence": one snippet, "claim": the
    claim's snippets joined).

    >>> case = {"case_id": "x", "lang": "en", "claims": [{"text": "c", "relation": "support", "evidence": [
    ...     {"source_id": "s", "text": "e", "relation": "contradict"}]}]}
    >>> [(r.text, r.pair, r.gold, r.inputs) for r in judge_rows(["evidence"])([case])]
    [('c', 'e', 'contradict', {'claim': 'c', 'evidence': ['e']})]
    """
    kinds = tuple(kinds)

    def rows(cases: Iterable[dict]) -> list[Row]:
        return [Row({"claim": p["claim"], "evidence": p["evidence"].split("\n")}, p["claim"], p["evidence"],
                    p["relation"], p["lang"], p["case_id"], {"kind": p["kind"], "source": p["source"]})
                for p in views.relation_pairs(cases) if p["kind"] in kinds]

    return rows


def judge_target(pred) -> str | None:
    """The relation the judge program gave (its aggregate over the row's snippets)."""
    try:
        return normalise_relation(pred.relation)
    except (AttributeError, ValueError):
        return None


def checkworthy_rows(cases: Iterable[dict]) -> list[Row]:
    """Gold sentences of `checkworthy_rows`, labelled checkworthy / not_checkworthy.

    >>> [(r.text, r.gold) for r in checkworthy_rows([{"case_id": "x", "lang": "en",
    ...     "sentences": [{"text": "Hi.", "checkworthy": False}]}])]
    [('Hi.', 'not_checkworthy')]
    """
    return [Row({"text": r["text"]}, r["text"], None, CHECKWORTHY_LABELS[bool(r["checkworthy"])], r["lang"],
                r["case_id"]) for r in views.checkworthy_rows(cases)]


def checkworthy_target(pred) -> str | None:
    value = getattr(pred, "checkworthy", None)
    return None if value is None else CHECKWORTHY_LABELS[bool(value)]


def vertical_rows(cases: Iterable[dict]) -> list[Row]:
    """Claims and case texts with a gold vertical (`vertical_rows`)."""
    return [Row({"claim": r["text"]}, r["text"], None, r["vertical"], r["lang"], r["case_id"],
                {"level": r["level"]}) for r in views.vertical_rows(cases)]


def vertical_target(verticals: Sequence[str]) -> Callable[[object], str | None]:
    allowed = set(verticals)

    def target(pred) -> str | None:
        value = str(getattr(pred, "vertical", "")).strip().lower()
        return value if value in allowed else None

    return target


def paragraph_type_rows(cases: Iterable[dict]) -> list[Row]:
    """Cases with a gold `paragraph_type` (`dataset=paragraph_types`), one paragraph each."""
    return [Row({"paragraph": c["text"]}, c["text"], None, c["paragraph_type"], c["lang"], c["case_id"])
            for c in cases if c.get("paragraph_type") in PARAGRAPH_TYPES]


def paragraph_type_target(pred) -> str | None:
    value = str(getattr(pred, "paragraph_type", "")).strip().lower()
    return value if value in PARAGRAPH_TYPES else None


def paragraph_type_task() -> ClassifierTask:
    return ClassifierTask("paragraph_type", PARAGRAPH_TYPES, paragraph_type_rows, paragraph_type_target)


def causal_strength_rows(cases: Iterable[dict]) -> list[Row]:
    """Cases with a gold `strength` (`dataset=causal_strength`), one sentence each."""
    return [Row({"sentence": c["text"]}, c["text"], None, c["strength"], c["lang"], c["case_id"])
            for c in cases if c.get("strength") in STRENGTHS]


def causal_strength_task() -> ClassifierTask:
    """Sentence -> causal strength: the logic layer's model, not a pipeline stage (no program, so no LM teacher)."""
    return ClassifierTask("causal_strength", STRENGTHS, causal_strength_rows, lambda pred: None)


def scope_rows(cases: Iterable[dict]) -> list[Row]:
    """Cases with a gold `scope` (`dataset=scope`), one sentence each."""
    return [Row({"sentence": c["text"]}, c["text"], None, c["scope"], c["lang"], c["case_id"])
            for c in cases if c.get("scope") in SCOPES]


def scope_task() -> ClassifierTask:
    """Sentence -> the population it is about (none / lab / restricted / general): the logic layer's scope model."""
    return ClassifierTask("scope", SCOPES, scope_rows, lambda pred: None)


def judge_task(kinds: Sequence[str]) -> ClassifierTask:
    return ClassifierTask("judge", RELATIONS, judge_rows(kinds), judge_target)


def checkworthy_task() -> ClassifierTask:
    return ClassifierTask("checkworthy", CHECKWORTHY_LABELS, checkworthy_rows, checkworthy_target)


def vertical_task(verticals: Sequence[str]) -> ClassifierTask:
    return ClassifierTask("vertical", tuple(verticals), vertical_rows, vertical_target(verticals))


def example_rows(stage: str, output_field: str) -> Callable[[Iterable[dict]], list[Row]]:
    """Rows from the stage's own examples (`factlab.programs.<stage>.to_examples`), gold = `output_field`.

    >>> rows = example_rows("query_rewrite", "queries")([{"case_id": "x", "lang": "en", "claims": [{"text": "c",
    ...     "queries": ["q"], "evidence": [{"chunk_id": "s#p1-c1", "text": "e"}]}]}])
    >>> [(r.inputs, r.text, r.gold) for r in rows]
    [({'claim': 'c'}, 'c', ['q'])]
    """

    def rows(cases: Iterable[dict]) -> list[Row]:
        out = []
        for example in stage_examples(cases, stage):
            inputs = example.inputs().toDict()
            gold = [str(v) for v in example.get(output_field) or []]
            out.append(Row(inputs, str(next(iter(inputs.values()))), None, gold or None, example.lang,
                           example.case_id, {"example": example}))
        return out

    return rows


def list_target(field_name: str, limit: int | None = None) -> Callable[[object], list[str] | None]:
    """The program output `field_name` as a clean list of strings (at most `limit`), None when empty."""

    def target(pred) -> list[str] | None:
        values = [v.strip() for v in (getattr(pred, field_name, None) or []) if isinstance(v, str) and v.strip()]
        return values[:limit] or None

    return target


def query_rewrite_task(max_queries: int) -> SFTTask:
    """Claim -> queries; the teacher's target is its first `max_queries` queries (the program appends year-less
    variants of its own after those, which the LM must not learn to write)."""
    return SFTTask("query_rewrite", ("claim",), "queries", example_rows("query_rewrite", "queries"),
                   list_target("queries", max_queries))


def extract_claims_task() -> SFTTask:
    """Paragraph (+ context) -> claims."""
    return SFTTask("extract_claims", ("paragraph", "context"), "claims", example_rows("extract_claims", "claims"),
                   list_target("claims"))
