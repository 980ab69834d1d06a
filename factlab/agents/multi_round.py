"""The multi-round search checker: search and reasoning interleaved (ReAct / Search-R1 style) over a budget of rounds,
holding STATE instead of history.

    # conf/agent/multi_round.yaml; _partial_ because Hydra would turn a rules object passed to instantiate into config
    checker = instantiate(cfg.checker, _partial_=True)(rules=instantiate(cfg.business))
    with lm.context():
        pred = checker(claim="The company behind ... was founded in Basel in 2004.", search=retriever.search)
    pred.relation, pred.label, [e.chunk_id for e in pred.evidence], [r.input_tokens for r in pred.rounds]

Each round the LM sees only: the goal (the claim), the confirmed facts (a short summary of everything learned so far,
each fact citing its [chunk id]), the open questions, and THIS round's search results trimmed to their relevant
sentences. It rewrites the facts (older rounds live on only as facts, capped at `max_state_tokens`), lists what is
still open and picks the next action. Independent open questions are searched in parallel in one round. The verdict
call sees the facts and the last results and names the relation and the chunks it relied on; the label comes from
the business rules (factlab/rules/business.py) over those chunks, never from the LM. Input tokens are metered per
round (factlab/agents/accounting.py), so a round costs about the same at round 1 and round 10: total cost grows
linearly with rounds, where a loop appending raw results (factlab/agents/naive_loop.py) grows quadratically.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import dspy

from factlab.agents.accounting import RoundLog, meter
from factlab.matching.text import as_confidence, containment, count_tokens, pick_choice, tokens
from factlab.retrieval.compress import compress
from factlab.retrieval.tokenizer import content_tokens
from factlab.schema import RELATIONS, Evidence, Judgment
from factlab.untrusted import neutralise

# search(queries, k, claim) -> evidence, as `factlab.retrieval.retriever.Retriever.search`.
Search = Callable[..., list[Evidence]]
NO_RESULTS = "(no results yet: plan the first searches)"


class UpdateState(dspy.Signature):
    """You check a claim that may need several hops (e.g. first find which building is the tallest, then its
    height). Read the confirmed facts, the open questions and this round's search results. Rewrite the confirmed
    facts: short sentences, each ending with the [chunk id] it came from, keeping only what matters for the claim.
    List the questions still open: each one answerable by one search, independent of the others, naming the
    entities found so far instead of pronouns. next_action is "search" to look the open questions up, or "answer"
    when the facts decide the claim (or nothing more can be found)."""

    goal: str = dspy.InputField(desc="the claim to check")
    confirmed_facts: list[str] = dspy.InputField(desc="what earlier rounds established")
    open_questions: list[str] = dspy.InputField(desc="what earlier rounds still needed")
    new_results: str = dspy.InputField(desc="this round's passages, trimmed, each starting with its [chunk id]")
    facts: list[str] = dspy.OutputField(desc="the updated confirmed facts, each ending with its [chunk id]")
    questions: list[str] = dspy.OutputField(desc="open questions to search next, at most 3")
    next_action: Literal["search", "answer"] = dspy.OutputField()


class Verdict(dspy.Signature):
    """Decide how the confirmed facts and the last results relate to the claim. support: they state the claim's
    facts (same numbers, dates, names, qualifiers). partial_support: they confirm part of it. contradict: they state
    something incompatible. insufficient: on topic but not enough to decide. irrelevant: about something else.
    List the chunk ids you relied on."""

    goal: str = dspy.InputField(desc="the claim to check")
    confirmed_facts: list[str] = dspy.InputField()
    new_results: str = dspy.InputField(desc="the last round's passages, trimmed")
    relation: str = dspy.OutputField(desc="one of: " + ", ".join(RELATIONS))
    confidence: str = dspy.OutputField(desc="a number between 0 and 1")
    chunk_ids: list[str] = dspy.OutputField(desc="ids of the chunks relied on")


@dataclass
class CheckerState:
    """What the LM carries between rounds instead of the history."""

    goal: str
    facts: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    next_action: str = "search"

    def tokens(self) -> int:
        return count_tokens(" ".join([self.goal, *self.facts, *self.open_questions]))


def clip_facts(facts: Sequence[str], max_tokens: int) -> list[str]:
    """The newest facts that fit `max_tokens` (the state's summary stays bounded however many rounds run).

    >>> clip_facts(["a b c", "d e", "f"], 3)
    ['d e', 'f']
    """
    kept, used = [], 0
    for fact in reversed([str(f) for f in facts if str(f).strip()]):
        cost = count_tokens(fact)
        if used + cost > max_tokens:
            break
        kept.append(fact)
        used += cost
    return kept[::-1]


def render_results(hits: Sequence[Evidence]) -> str:
    """Passages as the LM reads them: `[chunk_id] text` per line, each text neutralised (factlab.untrusted).

    >>> render_results([Evidence("s", "s#p1-c1", "Fleming found it.")])
    '[s#p1-c1] Fleming found it.'
    """
    return "\n".join(f"[{hit.chunk_id}] {' '.join(neutralise(hit.text).split())}" for hit in hits) or "(nothing found)"


def cited_ids(texts: Sequence[str]) -> list[str]:
    """Chunk ids cited as `[id]` in texts, in order, once each.

    >>> cited_ids(["Halvard was founded in 2004 [a#p1-c1].", "[b#p2-c1] and [a#p1-c1]"])
    ['a#p1-c1', 'b#p2-c1']
    """
    import re

    return list(dict.fromkeys(m for text in texts for m in re.findall(r"\[([^\[\]\s]+#p\d+-c\d+)\]", str(text))))


def relied_on(cited: Sequence[object], fallback: Sequence[str], seen: Mapping[str, Evidence],
              min_containment: float = 0.6, min_words: int = 4) -> list[Evidence]:
    """The shown passages a verdict relied on, in citation order, once each.

    A cited item resolves by its chunk id (bare, or as `[id]` inside a text). Small models often quote a passage, or
    their own fact sentence, instead of its id: a text of at least `min_words` tokens that names no shown id resolves to
    the shown passage holding the largest share of its words, when that share is at least `min_containment`. When
    nothing in `cited` resolves, `fallback` (the facts; the naive loop's history) is resolved the same way.

    >>> seen = {"a#p1-c1": Evidence("a", "a#p1-c1", "Halvard AG was founded in Basel in 2004.")}
    >>> [e.chunk_id for e in relied_on(["[a#p1-c1]"], [], seen)]
    ['a#p1-c1']
    >>> [e.chunk_id for e in relied_on(["Halvard AG was founded in 2004."], [], seen)]
    ['a#p1-c1']
    >>> relied_on(["2004"], ["Halvard moved to Zurich in 1990 after a merger."], seen)
    []
    """

    def resolve(items: Sequence[object]) -> list[str]:
        ids = []
        for item in items:
            text = str(item).strip()
            if text.strip("[] ") in seen:
                ids.append(text.strip("[] "))
                continue
            named = [cid for cid in cited_ids([text]) if cid in seen]
            if named:
                ids.extend(named)
            elif seen and len(tokens(text)) >= min_words:
                share, best = max((containment(text, evidence.text), cid) for cid, evidence in seen.items())
                if share >= min_containment:
                    ids.append(best)
        return ids

    ids = resolve(cited) or resolve(fallback)
    return [seen[cid] for cid in dict.fromkeys(ids)]


def decide_label(rules, vertical: str, relation: str, confidence: float, evidence: Sequence[Evidence]) -> str:
    """The business rules' label for the verdict applied to each relied-on snippet (none -> unverifiable)."""
    return rules.decide(vertical, [(item, Judgment(relation, confidence)) for item in evidence]).label


def search_parallel(search: Search, questions: Sequence[str], k: int, max_workers: int,
                    trim: bool) -> list[list[Evidence]]:
    """Search the questions at once (independent questions in one round); `trim`: the retriever cuts each chunk to
    the question's relevant sentences (claim=question), else whole chunks come back."""

    def one(question: str) -> list[Evidence]:
        return search([question], k=k, claim=question if trim else None)

    if len(questions) <= 1 or max_workers <= 1:
        return [one(q) for q in questions]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(questions))) as pool:
        return list(pool.map(one, questions))


class MultiRoundChecker(dspy.Module):
    """Check one claim in at most `max_rounds` rounds of state update + parallel search, then a verdict.

    Args:
        rules: a `factlab.rules.business.BusinessRules` (conf/business/<name>.yaml): turns the verdict into a label.
        max_rounds: the round budget (each round: one state-update call, then the searches it asked for).
        max_parallel: open questions searched per round (in parallel).
        k: passages kept per question.
        snippet_tokens: each passage is cut to its sentences most relevant to the question and the claim, within
            this budget.
        max_state_tokens: the confirmed facts are capped at this many tokens (the newest kept).
        max_workers: threads for the parallel searches.
        min_search_rounds: rounds that search even when the LM would answer (with no open question, the claim
            itself is searched): a small model tends to answer before looking anything up.
    """

    def __init__(self, rules, max_rounds: int = 4, max_parallel: int = 3, k: int = 3, snippet_tokens: int = 60,
                 max_state_tokens: int = 160, max_workers: int = 3, min_search_rounds: int = 1) -> None:
        super().__init__()
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1 (conf/agent/multi_round.yaml), got {max_rounds}")
        self.rules = rules
        self.max_rounds = max_rounds
        self.max_parallel = max_parallel
        self.k = k
        self.snippet_tokens = snippet_tokens
        self.max_state_tokens = max_state_tokens
        self.max_workers = max_workers
        self.min_search_rounds = min_search_rounds
        self.update = dspy.Predict(UpdateState)
        self.verdict = dspy.Predict(Verdict)

    def trim(self, hit: Evidence, question: str, claim: str) -> Evidence | None:
        """The hit cut to its sentences most relevant to the question and the claim (offsets kept); None when it
        shares no content word with either (a dense-only match that would only cost tokens)."""
        target = f"{question} {claim}"
        if not content_tokens(hit.text) & content_tokens(target):
            return None
        snippet = compress(hit.text, target, max_tokens=self.snippet_tokens, offset=hit.start)
        return Evidence(**{**hit.to_dict(), "text": snippet.text, "start": snippet.start, "end": snippet.end})

    def forward(self, claim: str, search: Search, vertical: str = "general") -> dspy.Prediction:
        state = CheckerState(goal=claim)
        seen: dict[str, Evidence] = {}
        rounds: list[RoundLog] = []
        new_results = NO_RESULTS
        for number in range(1, self.max_rounds + 1):
            context = state.tokens() + count_tokens(new_results)
            with meter() as cost:
                step = self.update(goal=claim, confirmed_facts=state.facts, open_questions=state.open_questions,
                                   new_results=new_results)
            state.facts = clip_facts(step.facts or [], self.max_state_tokens)
            state.open_questions = [str(q) for q in (step.questions or []) if str(q).strip()][: self.max_parallel]
            state.next_action = str(step.next_action)
            log = RoundLog(number, "step", cost.input_tokens, cost.lm_prompt_tokens, context_tokens=context)
            rounds.append(log)
            if number > self.min_search_rounds and (state.next_action == "answer" or not state.open_questions):
                new_results = "(no new search)"
                break
            state.open_questions = state.open_questions or [claim]
            log.queries = list(state.open_questions)
            found = search_parallel(search, state.open_questions, self.k, self.max_workers, trim=True)
            fresh = []
            for question, hits in zip(state.open_questions, found, strict=True):
                for hit in hits:
                    log.hits.append(hit.chunk_id)
                    if hit.chunk_id in seen:  # a passage is shown once; later rounds know it through the facts
                        continue
                    trimmed = self.trim(hit, question, claim)
                    if trimmed is not None:
                        seen[hit.chunk_id] = trimmed
                        fresh.append(trimmed)
            new_results = render_results(fresh)
        context = state.tokens() + count_tokens(new_results)
        with meter() as cost:
            verdict = self.verdict(goal=claim, confirmed_facts=state.facts, new_results=new_results)
        rounds.append(RoundLog(len(rounds) + 1, "verdict", cost.input_tokens, cost.lm_prompt_tokens,
                               context_tokens=context))
        relation = pick_choice(verdict.relation, RELATIONS)
        confidence = as_confidence(verdict.confidence)
        evidence = relied_on(verdict.chunk_ids or [], state.facts, seen)
        return dspy.Prediction(relation=relation, confidence=confidence,
                               label=decide_label(self.rules, vertical, relation, confidence, evidence),
                               evidence=evidence, rounds=rounds, state=state,
                               input_tokens=sum(r.input_tokens for r in rounds))
