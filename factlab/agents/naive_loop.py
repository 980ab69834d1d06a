"""The baseline the multi-round checker is measured against: a search loop that appends every round's raw results
(whole chunks) to a growing history and sends all of it to the LM each round, so round r costs O(r) tokens and r
rounds cost O(r^2). Same searches, same verdict rules, same token metering as factlab/agents/multi_round.py.
"""

from __future__ import annotations

from typing import Literal

import dspy

from factlab.agents.accounting import RoundLog, meter
from factlab.agents.multi_round import Search, decide_label, relied_on, render_results, search_parallel
from factlab.matching.text import as_confidence, count_tokens, pick_choice
from factlab.schema import RELATIONS, Evidence


class NaiveStep(dspy.Signature):
    """You check a claim that may need several hops. Read everything searched so far and decide what to search
    next: queries for what is still unknown, each answerable by one search. next_action is "search" or "answer"."""

    goal: str = dspy.InputField(desc="the claim to check")
    history: str = dspy.InputField(desc="every earlier round: its queries and all passages found")
    queries: list[str] = dspy.OutputField(desc="queries to search next, at most 3")
    next_action: Literal["search", "answer"] = dspy.OutputField()


class NaiveVerdict(dspy.Signature):
    """Decide how the passages found relate to the claim: support, partial_support, contradict, insufficient or
    irrelevant. List the chunk ids you relied on."""

    goal: str = dspy.InputField(desc="the claim to check")
    history: str = dspy.InputField(desc="every round: its queries and all passages found")
    relation: str = dspy.OutputField(desc="one of: " + ", ".join(RELATIONS))
    confidence: str = dspy.OutputField(desc="a number between 0 and 1")
    chunk_ids: list[str] = dspy.OutputField(desc="ids of the chunks relied on")


class NaiveSearchLoop(dspy.Module):
    """Search loop with the full history in context (the baseline); arguments as MultiRoundChecker's."""

    def __init__(self, rules, max_rounds: int = 4, max_parallel: int = 3, k: int = 3, max_workers: int = 3,
                 min_search_rounds: int = 1) -> None:
        super().__init__()
        self.rules = rules
        self.max_rounds = max_rounds
        self.max_parallel = max_parallel
        self.k = k
        self.max_workers = max_workers
        self.min_search_rounds = min_search_rounds
        self.step = dspy.Predict(NaiveStep)
        self.verdict = dspy.Predict(NaiveVerdict)

    def forward(self, claim: str, search: Search, vertical: str = "general") -> dspy.Prediction:
        history = "(nothing searched yet)"
        seen: dict[str, Evidence] = {}
        rounds: list[RoundLog] = []
        for number in range(1, self.max_rounds + 1):
            with meter() as cost:
                step = self.step(goal=claim, history=history)
            log = RoundLog(number, "step", cost.input_tokens, cost.lm_prompt_tokens,
                           context_tokens=count_tokens(history))
            rounds.append(log)
            queries = [str(q) for q in (step.queries or []) if str(q).strip()][: self.max_parallel]
            if number > self.min_search_rounds and (str(step.next_action) == "answer" or not queries):
                break
            queries = queries or [claim]
            log.queries = queries
            found = search_parallel(search, queries, self.k, self.max_workers, trim=False)
            hits = [hit for group in found for hit in group]
            log.hits = [hit.chunk_id for hit in hits]
            seen.update({hit.chunk_id: hit for hit in hits})
            entry = f"Round {number} searched: {'; '.join(queries)}\n{render_results(hits)}"
            history = entry if number == 1 else f"{history}\n\n{entry}"
        with meter() as cost:
            verdict = self.verdict(goal=claim, history=history)
        rounds.append(RoundLog(len(rounds) + 1, "verdict", cost.input_tokens, cost.lm_prompt_tokens,
                               context_tokens=count_tokens(history)))
        relation = pick_choice(verdict.relation, RELATIONS)
        confidence = as_confidence(verdict.confidence)
        evidence = relied_on(verdict.chunk_ids or [], [history], seen)
        return dspy.Prediction(relation=relation, confidence=confidence,
                               label=decide_label(self.rules, vertical, relation, confidence, evidence),
                               evidence=evidence, rounds=rounds, input_tokens=sum(r.input_tokens for r in rounds))
