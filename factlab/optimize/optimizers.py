"""The optimizers of `conf/optimizer/*.yaml`: each compiles a program on train (val for selection) and reports
what it tried. Test examples never reach them.

Every optimizer returns a `CompileResult`: the compiled program, the metric calls it spent (program runs, failed
ones included, as GEPA counts its budget), its candidates as table rows, the best val score over the budget spent
(for the score-over-budget plot), extra metrics and tables. Budgets: GEPA takes `max_metric_calls` itself; MIPROv2
and random search derive their trial / candidate counts from it (`miprov2_trials`, `bootstrap_candidates`), so
every optimizer gets the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from factlab.optimize.runs import claim_state_dir
from factlab.optimize.scoring import CountingMetric, RolloutCounter, StageScorer


@dataclass
class CompileContext:
    """What an optimizer may use besides the data: LMs, its run dir and the run's fingerprint."""

    student: Any  # factlab.models.lm.LMHandle
    reflector: Any | None  # built only for optimizers with uses_reflector
    run_dir: Path
    fingerprint: dict


@dataclass
class CompileResult:
    program: dspy.Module
    metric_calls: int
    candidates: list[dict] = field(default_factory=list)
    curve: list[tuple[int, float]] = field(default_factory=list)  # (metric calls spent, best val score so far)
    metrics: dict[str, float] = field(default_factory=dict)
    tables: dict[str, list[dict]] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def instructions(program: dspy.Module) -> dict[str, str]:
    """Predictor name -> its instruction."""
    return {name: predictor.signature.instructions for name, predictor in program.named_predictors()}


def demo_counts(program: dspy.Module) -> dict[str, int]:
    """Predictor name -> number of demos."""
    return {name: len(predictor.demos) for name, predictor in program.named_predictors()}


def best_so_far(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Running maximum of (calls, score) points sorted by calls.

    >>> best_so_far([(10, 0.5), (5, 0.6), (20, 0.7), (15, 0.4)])
    [(5, 0.6), (10, 0.6), (15, 0.6), (20, 0.7)]
    """
    out, best = [], -math.inf
    for calls, score in sorted(points):
        best = max(best, score)
        out.append((calls, best))
    return out


def miprov2_trials(budget: int, n_train: int, n_val: int, num_candidates: int, max_bootstrapped_demos: int,
                   max_labeled_demos: int, minibatch: bool, minibatch_size: int, full_eval_steps: int) -> int:
    """Trials of MIPROv2 that fit `budget` metric calls (at least 1).

    Spent (dspy 3.4.1's MIPROv2): bootstrapping `num_candidates - 2` demo sets (each scores train runs until it
    has its demos: about 3 runs per demo wanted; 3 demos when optimising instructions only, for the proposer),
    the default program on all of val, then per trial a minibatch (or all of val), plus a full val evaluation
    every `full_eval_steps` trials and at the end. An estimate: a student that is rarely right scores more train
    runs per demo, so the calls actually spent are logged as `optimizer/metric_calls`.

    >>> miprov2_trials(200, 100, 20, 4, 2, 2, True, 10, 5)
    10
    >>> miprov2_trials(60, 24, 10, 3, 0, 0, True, 10, 5)
    3
    """
    demos = max_bootstrapped_demos if max_bootstrapped_demos or max_labeled_demos else 3
    bootstrap = max(0, num_candidates - 2) * min(n_train, 3 * demos)

    def cost(trials: int) -> float:
        if not minibatch:
            return bootstrap + n_val * (trials + 1)
        full_evals = 1 + trials // full_eval_steps + (1 if trials % full_eval_steps else 0)
        return bootstrap + min(minibatch_size, n_val) * trials + n_val * full_evals

    trials = 1
    while cost(trials + 1) <= budget:
        trials += 1
    return trials


def bootstrap_candidates(budget: int, n_train: int, n_val: int, max_bootstrapped_demos: int) -> int:
    """Random-search candidates beyond its 3 fixed ones (zero-shot, labeled-only, plain bootstrap) that fit `budget`
    metric calls (0 = only the fixed ones).

    Zero-shot and labeled-only candidates cost one val evaluation each; every bootstrapped one also scores about
    3 train runs per demo wanted.

    >>> bootstrap_candidates(200, 100, 20, 3)
    4
    >>> bootstrap_candidates(30, 30, 6, 3)
    0
    """
    per_candidate = n_val + min(n_train, 3 * max_bootstrapped_demos)
    return max(0, int((budget - 2 * n_val) // per_candidate) - 1)


def proposal_log(accepted: list[dict], rejected: list[dict], candidates: list[dict]) -> list[dict]:
    """Every proposal of a GEPA run with what became of it: rejected by the guard (its reason), or passed to GEPA and
    then kept (it became candidate N, with its val score) or dropped (GEPA adopts a proposal only when it scores
    better than its parent on the reflection minibatch).

    A small reflector repeats itself, so several proposals can carry one candidate's text; each candidate is claimed
    once, by the last proposal with its text made before the candidate's discovery (`metric_calls` of the proposal,
    stamped by the proposer, against the candidate's `metric_calls_at_discovery`), else by the first unclaimed one.

    >>> cands = [{"candidate": 0, "instructions": {"p": "seed"}, "val_score": 0.5, "metric_calls_at_discovery": 0},
    ...          {"candidate": 1, "instructions": {"p": "seed + rule"}, "val_score": 0.6,
    ...           "metric_calls_at_discovery": 40}]
    >>> [(r["outcome"], r.get("candidate")) for r in proposal_log(
    ...     [{"component": "p", "text": "seed + rule", "metric_calls": 10},
    ...      {"component": "p", "text": "seed + rule", "metric_calls": 34},
    ...      {"component": "p", "text": "other", "metric_calls": 90},
    ...      {"component": "p", "text": "seed + rule", "metric_calls": 96}],
    ...     [{"component": "p", "text": "", "reason": "empty"}], cands)]
    [('dropped', None), ('kept', 1), ('dropped', None), ('dropped', None), ('rejected', None)]
    """
    def key(component: str, text: str) -> tuple[str, str]:
        return component, " ".join(text.split())

    claimed: dict[int, dict] = {}  # index into accepted -> candidate
    for cand in sorted((c for c in candidates if c["candidate"] > 0), key=lambda c: c["candidate"]):
        texts = {key(name, text) for name, text in cand["instructions"].items()}
        matching = [i for i, proposal in enumerate(accepted)
                    if i not in claimed and key(proposal["component"], proposal["text"]) in texts]
        discovered = cand.get("metric_calls_at_discovery", -1)
        before = [i for i in matching if accepted[i].get("metric_calls", discovered + 1) <= discovered]
        if before or matching:
            claimed[before[-1] if before else matching[0]] = cand
    rows = []
    for i, proposal in enumerate(accepted):
        if i in claimed:
            rows.append({**proposal, "outcome": "kept", "candidate": claimed[i]["candidate"],
                         "val_score": claimed[i]["val_score"], "reason": "better than its parent on the minibatch"})
        else:
            rows.append({**proposal, "outcome": "dropped",
                         "reason": "not better than its parent on the reflection minibatch"})
    rows += [{**proposal, "outcome": "rejected"} for proposal in rejected]
    return rows


class GEPAOptimizer:
    """dspy.GEPA with the knobs of conf/optimizer/gepa.yaml, checkpointing into a run-specific log dir."""

    uses_reflector = True

    def __init__(self, name: str, max_metric_calls: int, reflection_minibatch_size: int,
                 candidate_selection_strategy: str, skip_perfect_score: bool, use_merge: bool,
                 max_merge_invocations: int, failure_score: float, perfect_score: float,
                 add_format_failure_as_feedback: bool, component_selector: str, num_threads: int, seed: int,
                 log_dir: str | None, instruction_proposer: Callable) -> None:
        self.name = name
        self.log_dir = log_dir
        self.instruction_proposer = instruction_proposer
        self.knobs = dict(
            max_metric_calls=max_metric_calls, reflection_minibatch_size=reflection_minibatch_size,
            candidate_selection_strategy=candidate_selection_strategy, skip_perfect_score=skip_perfect_score,
            use_merge=use_merge, max_merge_invocations=max_merge_invocations, failure_score=failure_score,
            perfect_score=perfect_score, add_format_failure_as_feedback=add_format_failure_as_feedback,
            component_selector=component_selector, num_threads=num_threads, seed=seed,
        )

    def compile(self, program: dspy.Module, trainset: list, valset: list, scorer: StageScorer,
                ctx: CompileContext) -> CompileResult:
        from dspy.teleprompt.gepa.gepa import DspyGEPAResult

        metric = CountingMetric(scorer, feedback=True)
        log_dir = claim_state_dir(self.log_dir or ctx.run_dir / "gepa", ctx.fingerprint)
        if hasattr(self.instruction_proposer, "clock"):
            self.instruction_proposer.clock = lambda: metric.calls
        optimizer = dspy.GEPA(metric=metric, reflection_lm=ctx.reflector.lm,
                              instruction_proposer=self.instruction_proposer, log_dir=str(log_dir), track_stats=True,
                              **self.knobs)
        compiled = optimizer.compile(program, trainset=trainset, valset=valset)
        result = compiled.detailed_results
        pareto = set().union(*result.per_val_instance_best_candidates.values())
        candidates = []
        for index, candidate in enumerate(result.candidates):
            subscores = result.val_subscores[index]
            candidates.append({
                "candidate": index, "parents": [p for p in result.parents[index] if p is not None],
                "val_score": result.val_aggregate_scores[index],
                "val_subscores": [subscores[key] for key in sorted(subscores)],
                "pareto": index in pareto,
                "pareto_instances": sum(index in best for best in result.per_val_instance_best_candidates.values()),
                "metric_calls_at_discovery": result.discovery_eval_counts[index],
                "best": index == result.best_idx,
                "instructions": DspyGEPAResult._candidate_components(candidate),
            })
        # a resumed run: GEPA's counts include the calls before this process, the proposer's stamps start at 0
        offset = int(result.total_metric_calls) - metric.calls
        def shifted(rows: list[dict]) -> list[dict]:
            return [{**row, "metric_calls": row["metric_calls"] + offset} if "metric_calls" in row else dict(row)
                    for row in rows]

        rejected = shifted(getattr(self.instruction_proposer, "rejected", []))
        accepted = shifted(getattr(self.instruction_proposer, "accepted", []))
        log = proposal_log(accepted, rejected, candidates)
        return CompileResult(
            program=compiled,
            metric_calls=int(result.total_metric_calls),
            candidates=candidates,
            curve=best_so_far(list(zip(result.discovery_eval_counts, result.val_aggregate_scores, strict=True))),
            metrics={"gepa/candidates": len(candidates), "gepa/pareto_candidates": len(pareto),
                     "gepa/full_val_evals": float(result.num_full_val_evals or 0),
                     "gepa/proposals_rejected": len(rejected), "gepa/proposals_accepted": len(accepted),
                     "gepa/proposals_kept": sum(row["outcome"] == "kept" for row in log),
                     "gepa/best_candidate": result.best_idx},
            tables={"gepa/rejected_proposals.jsonl": rejected, "gepa/proposals.jsonl": accepted,
                    "gepa/proposal_log.jsonl": log},
            tags={"gepa.log_dir": str(log_dir)},
        )


def never_cancel(max_errors: int | None, trainset: list, valset: list) -> int:
    """DSPy's error allowance for an optimizer: the configured one, or (None) more errors than there are examples, so
    an example whose LM call or parse fails scores 0 and the run goes on. DSPy's default (10) cancels the whole
    compile instead: measured on the judge's bootstrap run, where the 0.5B student copied the labeled demos'
    "Not supplied for this particular example." into a typed field.

    >>> never_cancel(None, [1, 2], [3]), never_cancel(5, [1, 2], [3])
    (4, 5)
    """
    return max_errors if max_errors is not None else len(trainset) + len(valset) + 1


class MIPROv2Optimizer:
    """dspy.MIPROv2 (auto=None) with num_trials derived from the metric-call budget unless given."""

    uses_reflector = True

    def __init__(self, name: str, max_metric_calls: int, num_candidates: int, num_trials: int | None,
                 max_bootstrapped_demos: int, max_labeled_demos: int, metric_threshold: float | None,
                 minibatch: bool, minibatch_size: int, minibatch_full_eval_steps: int, program_aware_proposer: bool,
                 data_aware_proposer: bool, tip_aware_proposer: bool, fewshot_aware_proposer: bool,
                 view_data_batch_size: int, init_temperature: float, num_threads: int, seed: int,
                 max_errors: int | None = None) -> None:
        self.name = name
        self.max_errors = max_errors
        self.max_metric_calls = max_metric_calls
        self.num_candidates = num_candidates
        self.num_trials = num_trials
        self.max_bootstrapped_demos = max_bootstrapped_demos
        self.max_labeled_demos = max_labeled_demos
        self.metric_threshold = metric_threshold
        self.minibatch = minibatch
        self.minibatch_size = minibatch_size
        self.minibatch_full_eval_steps = minibatch_full_eval_steps
        self.proposer_flags = dict(program_aware_proposer=program_aware_proposer,
                                   data_aware_proposer=data_aware_proposer, tip_aware_proposer=tip_aware_proposer,
                                   fewshot_aware_proposer=fewshot_aware_proposer,
                                   view_data_batch_size=view_data_batch_size)
        self.init_temperature = init_temperature
        self.num_threads = num_threads
        self.seed = seed

    def compile(self, program: dspy.Module, trainset: list, valset: list, scorer: StageScorer,
                ctx: CompileContext) -> CompileResult:
        metric = CountingMetric(scorer, feedback=False)
        minibatch_size = min(self.minibatch_size, len(valset))
        trials = self.num_trials if self.num_trials is not None else miprov2_trials(
            self.max_metric_calls, len(trainset), len(valset), self.num_candidates, self.max_bootstrapped_demos,
            self.max_labeled_demos, self.minibatch, minibatch_size, self.minibatch_full_eval_steps)
        optimizer = dspy.MIPROv2(metric=metric, prompt_model=ctx.reflector.lm, task_model=ctx.student.lm,
                                 max_bootstrapped_demos=self.max_bootstrapped_demos,
                                 max_labeled_demos=self.max_labeled_demos, auto=None,
                                 num_candidates=self.num_candidates, num_threads=self.num_threads, seed=self.seed,
                                 init_temperature=self.init_temperature, verbose=False, track_stats=True,
                                 log_dir=None, metric_threshold=self.metric_threshold,
                                 max_errors=never_cancel(self.max_errors, trainset, valset))
        rollouts = RolloutCounter(type(program))
        with dspy.context(callbacks=[*dspy.settings.callbacks, rollouts]):
            compiled = optimizer.compile(program, trainset=trainset, valset=valset, num_trials=trials,
                                         minibatch=self.minibatch, minibatch_size=minibatch_size,
                                         minibatch_full_eval_steps=self.minibatch_full_eval_steps,
                                         requires_permission_to_run=False, **self.proposer_flags)
        candidates, full_points = [], []
        for trial, log in sorted(getattr(compiled, "trial_logs", {}).items()):
            full = "full_eval_score" in log
            candidate = log.get("full_eval_program") or log.get("mb_program")
            score = log.get("full_eval_score", log.get("mb_score"))
            score = None if score is None else float(score) / 100.0  # dspy.Evaluate reports percent
            calls = log.get("total_eval_calls_so_far")
            candidates.append({"trial": trial, "kind": "full" if full else "minibatch", "score": score,
                               "metric_calls_so_far": calls,
                               "instructions": instructions(candidate) if candidate is not None else None,
                               "demos": demo_counts(candidate) if candidate is not None else None})
            if full and score is not None and calls is not None:
                full_points.append((int(calls), float(score)))
        return CompileResult(program=compiled, metric_calls=rollouts.runs, candidates=candidates,
                             curve=best_so_far(full_points),
                             metrics={"miprov2/trials": trials, "miprov2/full_evals": len(full_points),
                                      "optimizer/scored_calls": metric.calls})


class BootstrapRSOptimizer:
    """dspy.BootstrapFewShotWithRandomSearch with the candidate count derived from the budget unless given."""

    uses_reflector = False

    def __init__(self, name: str, max_metric_calls: int, num_candidate_programs: int | None,
                 max_bootstrapped_demos: int, max_labeled_demos: int, max_rounds: int,
                 metric_threshold: float | None, max_errors: int | None, num_threads: int) -> None:
        self.name = name
        self.max_metric_calls = max_metric_calls
        self.num_candidate_programs = num_candidate_programs
        self.max_bootstrapped_demos = max_bootstrapped_demos
        self.max_labeled_demos = max_labeled_demos
        self.max_rounds = max_rounds
        self.metric_threshold = metric_threshold
        self.max_errors = max_errors
        self.num_threads = num_threads

    def compile(self, program: dspy.Module, trainset: list, valset: list, scorer: StageScorer,
                ctx: CompileContext) -> CompileResult:
        metric = CountingMetric(scorer, feedback=False)
        rollouts = RolloutCounter(type(program))
        count = self.num_candidate_programs if self.num_candidate_programs is not None else bootstrap_candidates(
            self.max_metric_calls, len(trainset), len(valset), self.max_bootstrapped_demos)
        optimizer = dspy.BootstrapFewShotWithRandomSearch(
            metric=metric, max_bootstrapped_demos=self.max_bootstrapped_demos,
            max_labeled_demos=self.max_labeled_demos, max_rounds=self.max_rounds, num_candidate_programs=count,
            num_threads=self.num_threads, max_errors=never_cancel(self.max_errors, trainset, valset),
            metric_threshold=self.metric_threshold)
        with dspy.context(callbacks=[*dspy.settings.callbacks, rollouts]):
            compiled = optimizer.compile(program, trainset=trainset, valset=valset)
        by_seed = sorted(compiled.candidate_programs, key=lambda c: c["seed"])  # evaluation order
        candidates = []
        for (calls, _), entry in zip(rollouts.marks, by_seed, strict=False):
            candidates.append({"seed": entry["seed"], "val_score": float(entry["score"]) / 100.0,
                               "metric_calls_at_discovery": calls, "demos": demo_counts(entry["program"]),
                               "best": entry is compiled.candidate_programs[0]})
        return CompileResult(program=compiled, metric_calls=rollouts.runs, candidates=candidates,
                             curve=best_so_far([(c["metric_calls_at_discovery"], c["val_score"]) for c in candidates]),
                             metrics={"bootstrap/candidate_programs": count, "optimizer/scored_calls": metric.calls})


class LabeledFewShotOptimizer:
    """dspy.LabeledFewShot: k gold train examples as demos (no LM or metric calls)."""

    uses_reflector = False

    def __init__(self, name: str, k: int, sample: bool) -> None:
        self.name = name
        self.k = k
        self.sample = sample

    def compile(self, program: dspy.Module, trainset: list, valset: list, scorer: StageScorer,
                ctx: CompileContext) -> CompileResult:
        compiled = dspy.LabeledFewShot(k=self.k).compile(program, trainset=trainset, sample=self.sample)
        return CompileResult(program=compiled, metric_calls=0)


class NoOptimizer:
    """The program as written: the baseline as a run of its own."""

    uses_reflector = False

    def __init__(self, name: str) -> None:
        self.name = name

    def compile(self, program: dspy.Module, trainset: list, valset: list, scorer: StageScorer,
                ctx: CompileContext) -> CompileResult:
        return CompileResult(program=program.deepcopy(), metric_calls=0)
