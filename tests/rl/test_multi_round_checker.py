"""The multi-round checker and its naive baseline with DSPy's DummyLM on the bundled corpus (hashing encoder)."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.dummies import DummyLM
from hydra.utils import instantiate
from omegaconf import OmegaConf

from factlab.agents.accounting import message_tokens
from factlab.agents.multi_round import CheckerState, MultiRoundChecker, clip_facts
from factlab.config import CONF_DIR, compose_config
from factlab.matching.text import count_tokens

CLAIM = ("The company behind the first oral CGRP-pathway-blocking medicine recommended for migraine prevention in the "
         "European Union was founded in Basel in 2004.")
Q1 = "first oral CGRP pathway medicine migraine prevention European Union"
Q2 = "Halvard Pharma founded Basel 2004"


@pytest.fixture(scope="module")
def rules():
    return instantiate(compose_config("verify", ["input=x", "sources=y"]).business)


@pytest.fixture(scope="module")
def search(retrievers):
    (retriever,) = retrievers.values()
    calls = []

    def traced(queries, k, claim=None):
        calls.append((tuple(queries), claim))
        return retriever.search(queries, k=k, claim=claim)

    traced.calls = calls
    return traced


def checker(name: str, rules, **overrides):
    node = OmegaConf.load(CONF_DIR / "agent" / f"{name}.yaml")
    node.merge_with(overrides)
    return instantiate(node, _partial_=True)(rules=rules)


def script(rounds: int) -> list[dict]:
    answers = [{"facts": [], "questions": [Q1, "which company makes that medicine"], "next_action": "search"}]
    for r in range(2, rounds + 1):
        answers.append({"facts": [f"Lumorvastat is the first oral CGRP medicine [ena-lumorvastat-ema#p1-c1] ({r})"],
                        "questions": [Q2], "next_action": "search"})
    answers.append({"relation": "support", "confidence": 0.9,
                    "chunk_ids": ["ena-halvard-register#p1-c1", "ena-lumorvastat-ema#p1-c1"]})
    return answers


def test_checker_config_builds_the_module(rules):
    module = checker("multi_round", rules)
    assert isinstance(module, MultiRoundChecker) and module.max_rounds == 4 and module.rules is rules


def test_state_not_history_and_label_from_rules(rules, search):
    module = checker("multi_round", rules, max_rounds=2)
    lm = DummyLM(script(2))
    search.calls.clear()
    with dspy.context(lm=lm):
        pred = module(claim=CLAIM, search=search, vertical="medical")
    assert pred.relation == "support" and pred.label == "correct"  # tier-1 support -> correct by the rules
    assert {e.chunk_id for e in pred.evidence} <= {"ena-halvard-register#p1-c1", "ena-lumorvastat-ema#p1-c1"}
    assert pred.evidence
    # round 1 searched its two independent questions together, each trimmed to the question (claim=question)
    assert [(q, c) for (q,), c in search.calls[:2]] == [(Q1, Q1), ("which company makes that medicine",
                                                                  "which company makes that medicine")]
    assert [r.kind for r in pred.rounds] == ["step", "step", "verdict"]
    assert pred.rounds[0].queries == [Q1, "which company makes that medicine"] and pred.rounds[0].hits
    assert pred.input_tokens == sum(r.input_tokens for r in pred.rounds) == sum(
        message_tokens(entry["messages"]) for entry in lm.history)
    # the second call saw round 1's passages trimmed to their relevant sentences (<= snippet_tokens each)
    second = lm.history[1]["messages"][-1]["content"]
    passages = second.split("[[ ## new_results ## ]]")[1].strip().split("\n\n")[0].splitlines()
    assert any(line.startswith("[ena-lumorvastat-ema#p1-c1]") for line in passages)
    for line in passages:
        chunk_id = line[1:line.index("]")]
        assert count_tokens(line) <= module.snippet_tokens + count_tokens(chunk_id), line


def test_rounds_cost_flat_while_naive_grows(rules, search):
    rounds = 4
    ours = checker("multi_round", rules, max_rounds=rounds)
    naive = checker("naive_loop", rules, max_rounds=rounds)
    with dspy.context(lm=DummyLM(script(rounds))):
        flat = [r.input_tokens for r in ours(claim=CLAIM, search=search).rounds if r.kind == "step"]
    naive_script = [{"queries": [Q1, Q2], "next_action": "search"}] * rounds + [
        {"relation": "support", "confidence": 0.9, "chunk_ids": []}]
    with dspy.context(lm=DummyLM(naive_script)):
        growing = [r.input_tokens for r in naive(claim=CLAIM, search=search).rounds if r.kind == "step"]
    assert all(b > a for a, b in zip(growing, growing[1:], strict=False)), growing
    assert max(flat[1:]) - min(flat[1:]) < (growing[-1] - growing[1]) / 2, (flat, growing)


def test_answer_without_evidence_is_unverifiable(rules, search):
    module = checker("multi_round", rules, min_search_rounds=0)
    lm = DummyLM([{"facts": [], "questions": [], "next_action": "answer"},
                  {"relation": "support", "confidence": 0.9, "chunk_ids": ["nowhere#p1-c1"]}])
    with dspy.context(lm=lm):
        pred = module(claim=CLAIM, search=search)
    assert pred.evidence == [] and pred.label == "unverifiable"  # the rules never call support without evidence


def test_first_round_searches_even_when_the_lm_answers_at_once(rules, search):
    module = checker("multi_round", rules, max_rounds=1)  # min_search_rounds: 1 in the config
    lm = DummyLM([{"facts": [], "questions": [], "next_action": "answer"},
                  {"relation": "support", "confidence": 0.9, "chunk_ids": ["ena-halvard-register#p1-c1"]}])
    search.calls.clear()
    with dspy.context(lm=lm):
        pred = module(claim=CLAIM, search=search)
    assert search.calls == [((CLAIM,), CLAIM)] and pred.rounds[0].queries == [CLAIM]
    assert "[[ ## new_results ## ]]\n(no results yet" not in lm.history[1]["messages"][-1]["content"]


def test_state_is_bounded():
    facts = [f"fact number {i} about the claim [s#p1-c{i}]" for i in range(50)]
    kept = clip_facts(facts, 40)
    assert kept == facts[-len(kept):] and CheckerState("goal", kept).tokens() <= 41


def test_no_lm_configured_names_the_fix(rules, search):
    with dspy.context(lm=None), pytest.raises(RuntimeError, match="lm_handle.context"):
        checker("multi_round", rules)(claim=CLAIM, search=search)


@pytest.mark.parametrize("name", ["multi_round", "naive_loop"])
def test_a_verdict_quoting_the_passage_instead_of_its_id_still_cites_it(name, rules, search):
    """Small models (Qwen 1.5B, measured) put the passage or a fact sentence in chunk_ids instead of the id."""
    quote = ("Halvard Pharma AG, with its registered office in Basel, was entered in the commercial register on "
             "12 March 2004")
    steps = ([{"facts": [], "questions": [Q2], "next_action": "search"}] * 2 if name == "multi_round"
             else [{"queries": [Q2], "next_action": "search"}] * 2)
    lm = DummyLM([*steps, {"relation": "support", "confidence": 0.9, "chunk_ids": [quote, "1962年"]}])
    with dspy.context(lm=lm):
        pred = checker(name, rules, max_rounds=2)(claim=CLAIM, search=search)
    assert [e.chunk_id for e in pred.evidence] == ["ena-halvard-register#p1-c1"]
