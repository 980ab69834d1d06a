"""The proposal guard: GEPA never adopts an empty, truncated or template-echo reflection as an instruction."""

from __future__ import annotations

import pytest
from optimize_fakes import fake_config

from factlab.optimize.job import run
from factlab.optimize.proposer import FencedProposer, GuardedProposer, proposal_problem

LIMITS = dict(min_chars=40, max_chars=400, max_unpunctuated_tail=60,
              template_markers=["I provided an assistant with", "<side_info>", "[[ ## "])
CURRENT = "Decide whether the text states a checkable fact."
GOOD = "Decide whether the text states a checkable fact about the world: a number, a date, an event or a finding."


@pytest.mark.parametrize(("text", "problem"), [
    ("", "empty"),
    ("   \n ", "empty"),
    ("Be precise.", "too short"),
    ("x " * 300, "too long"),
    (CURRENT + "  ", "identical to the current instruction"),
    ("Decide whether the text states a checkable fact about the world; answer true for numbers, dates and",
     "ends mid-sentence"),
    ("Decide whether the text states a checkable fact about the world. Consider the following cases:",
     "ends mid-sentence"),
    ("I provided an assistant with the following instructions to perform a task for me.", "echoes the reflection"),
    ("[[ ## new_instruction ## ]]\nDecide whether the text states a checkable fact, always.", "echoes the reflection"),
    ("Decide whether the text states a fact.\n```\nexample: 1928 penicillin\n", "unclosed code fence"),
    (GOOD, None),
    ("判断文本是否陈述了可核查的事实。", "too short"),
    ("判断文本是否陈述了可以用证据证实或反驳的事实，例如数字、日期、事件、研究发现或归属。观点、主观评价、问候、问题和指令都不属于可核查内容。",
     None),
])
def test_proposal_problem(text, problem):
    found = proposal_problem(text, CURRENT, **LIMITS)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem)), found


def test_guard_drops_and_records_bad_proposals_and_keeps_good_ones():
    answers = {"a": "", "b": GOOD}
    guard = GuardedProposer(lambda candidate, reflective_dataset, components_to_update: answers, **LIMITS)
    kept = guard({"a": CURRENT, "b": CURRENT}, {"a": [{}], "b": [{}]}, ["a", "b"])
    assert kept == {"b": GOOD}
    assert guard.rejected == [{"component": "a", "reason": "empty", "text": ""}]


def test_guard_turns_a_failing_reflector_into_a_rejection():
    def broken(candidate, reflective_dataset, components_to_update):
        raise ValueError("The reflection LM returned an empty instruction")

    guard = GuardedProposer(broken, **LIMITS)
    assert guard({"a": CURRENT}, {"a": [{}]}, ["a"]) == {}
    assert guard.rejected[0]["reason"].startswith("proposer raised ValueError")


def test_fenced_proposer_reads_the_fenced_block():
    import dspy

    with dspy.context(lm=lambda prompt, **kwargs: [f"Here it is:\n```\n{GOOD}\n```\nDone."]):
        out = FencedProposer()({"classify": CURRENT}, {"classify": [{"Inputs": {"text": "t"}, "Feedback": "f"}]},
                               ["classify"])
    assert out == {"classify": GOOD}


def test_gepa_with_an_empty_reflector_keeps_the_instruction_and_logs_the_rejection(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=gepa", "budget.max_metric_calls=40"], empty_reflector=True))
    assert out["instructions_after"] == out["instructions_before"]
    assert out["gepa/proposals_rejected"] >= 1 and out["gepa/proposals_accepted"] == 0
    assert out["gepa/candidates"] == 1
