"""The stage's scoring core as the optimizers and the evaluations see it: feedback, plain scores, call counts.

One definition of "right" per stage lives in `factlab.programs.<stage>` (`_score`, `metric`); this module only
plugs in a retriever for metrics that take `retrieve=`, a claim matcher for metrics that take `match=`, and counts
how often the optimizer scored a program run.
"""

from __future__ import annotations

import importlib
import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dspy

from factlab.matching.text import Match
from factlab.models.errors import call_safely
from factlab.schema import to_jsonable

Retrieve = Callable[[list[str]], list[str]]


class StageScorer:
    """Score one stage's predictions with its own metric and scoring core.

    Args:
        stage: a module name under factlab/programs.
        retrieve_for: example -> a `retrieve(queries) -> chunk ids` callable over that example's corpus; used by
            stages whose metric takes `retrieve=` (query_rewrite), ignored by the others.
        match: `(gold claims, predicted claims) -> [(gold index, pred index, similarity)]`; used by stages whose
            metric takes `match=` (extract_claims), ignored by the others; None = the metric's own matching.
    """

    def __init__(self, stage: str, retrieve_for: Callable[[dspy.Example], Retrieve] | None = None,
                 match: Match | None = None) -> None:
        self.stage = stage
        self.module = importlib.import_module(f"factlab.programs.{stage}")
        parameters = inspect.signature(self.module.metric).parameters
        self.takes_retrieve = "retrieve" in parameters
        self.takes_match = "match" in parameters
        self.retrieve_for = retrieve_for if self.takes_retrieve else None
        self.match = match if self.takes_match else None

    def _extra(self, gold: dspy.Example) -> dict[str, Any]:
        extra: dict[str, Any] = {"retrieve": self.retrieve_for(gold)} if self.retrieve_for is not None else {}
        if self.match is not None:
            extra["match"] = self.match
        return extra

    def feedback(self, gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
        """The stage metric: `dspy.Prediction(score, feedback)`."""
        return self.module.metric(gold, pred, trace, pred_name, pred_trace, **self._extra(gold))

    def details(self, gold, pred) -> dict[str, Any]:
        """The scoring core's details of one prediction (e.g. the judge's snippet accuracy)."""
        return self.module._score(gold, pred, **self._extra(gold))[1]


class CountingMetric:
    """The stage metric for an optimizer, counting scored program runs (calls without `pred_name`).

    GEPA asks again with `pred_name` for a predictor's feedback on a run it already scored; those calls are not
    counted. `feedback=False` returns the bare score, for optimizers that threshold or average it.
    """

    def __init__(self, scorer: StageScorer, feedback: bool) -> None:
        self.scorer = scorer
        self.return_feedback = feedback
        self.calls = 0

    def __call__(self, gold, pred, trace=None, pred_name=None, pred_trace=None):
        result = self.scorer.feedback(gold, pred, trace, pred_name, pred_trace)
        if pred_name is None:
            self.calls += 1
        return result if self.return_feedback else float(result.score)


class RolloutCounter(dspy.utils.callback.BaseCallback):
    """Counts runs of the stage program (instances of `program_type`, however the optimizer copies them), failed
    ones included: a run whose LM call failed never reaches the metric but spent the budget all the same.
    Records (runs so far, score in [0, 1]) at the end of every dspy.Evaluate run."""

    def __init__(self, program_type: type) -> None:
        self.program_type = program_type
        self.runs = 0
        self.marks: list[tuple[int, float]] = []

    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        if isinstance(instance, self.program_type):
            self.runs += 1

    def on_evaluate_end(self, call_id: str, outputs: Any | None, exception: Exception | None = None) -> None:
        score = getattr(outputs, "score", None)
        if score is not None:
            self.marks.append((self.runs, float(score) / 100.0))  # dspy.Evaluate reports percent


@dataclass
class EvalReport:
    """One program on one split: the mean score, per-example rows and averaged scoring-core details."""

    score: float
    rows: list[dict]
    extras: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


def _numeric(details: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in details.items() if isinstance(v, int | float) and not isinstance(v, str)}


def evaluate(program: dspy.Module, examples: list[dspy.Example], scorer: StageScorer, split: str, label: str,
             num_threads: int = 1, breaker=None) -> EvalReport:
    """Run `program` on every example (a failing call scores 0 and keeps its error) and score it.

    Args:
        split, label: written into every row (e.g. "val", "baseline").
        breaker: the LM's breaker (a dead server fails the remaining examples at once).
    """
    from dspy.utils.parallelizer import ParallelExecutor

    def one(example: dspy.Example) -> dict:
        pred, error = call_safely(scorer.stage, program, breaker, **example.inputs().toDict())
        row = {"split": split, "program": label, "case_id": example.get("case_id"), "lang": example.get("lang"),
               "inputs": to_jsonable(example.inputs().toDict()),
               "gold": to_jsonable({k: v for k, v in example.labels().toDict().items()
                                    if k not in ("case_id", "lang")})}
        if error is not None:
            return {**row, "prediction": None, "score": 0.0, "feedback": "", "error": str(error), "details": {}}
        result = scorer.feedback(example, pred)
        return {**row, "prediction": to_jsonable(pred.toDict()), "score": float(result.score),
                "feedback": result.feedback, "error": None, "details": to_jsonable(scorer.details(example, pred))}

    from tqdm import tqdm

    start = time.perf_counter()
    bar = tqdm(total=len(examples), desc=f"{label} {split}", unit="example", mininterval=5.0)
    lock = threading.Lock()

    def counted(example: dspy.Example) -> dict:
        try:
            return one(example)
        finally:
            with lock:
                bar.update()

    executor = ParallelExecutor(num_threads=num_threads, disable_progress_bar=True, max_errors=len(examples) + 1)
    try:
        rows = executor.execute(counted, examples)
    finally:
        bar.close()
    failed = [example.get("case_id") for example, row in zip(examples, rows, strict=True) if row is None]
    if failed:  # the program's own failures are caught in one(); this is the scoring code failing
        raise RuntimeError(f"scoring {scorer.stage} failed on {len(failed)} {split} examples (cases {failed[:5]}); "
                           "see the logged traceback")
    extras: dict[str, list[float]] = {}
    for row in rows:
        for key, value in _numeric(row["details"]).items():
            extras.setdefault(key, []).append(value)
        extras.setdefault(f"score_{row['lang']}", []).append(row["score"])
    averaged = {key: sum(values) / len(values) for key, values in extras.items()}
    averaged["errors"] = float(sum(row["error"] is not None for row in rows))
    score = sum(row["score"] for row in rows) / len(rows)
    return EvalReport(score=score, rows=rows, extras=averaged, seconds=time.perf_counter() - start)
