"""The proposal guard: GEPA never adopts an empty, truncated or template-echo reflection as an instruction."""

from __future__ import annotations

import pytest
from optimize_fakes import KEYWORD, fake_config

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


def test_the_shipped_markers_catch_what_the_15b_pasted_into_proposals():
    """Seen with the local 1.5B reflector: its reasoning after the seed (checkworthy), and the reflective dataset
    itself, examples, outputs and feedback, as the new instruction (vertical)."""
    from omegaconf import OmegaConf

    from factlab.config import CONF_DIR

    guard = OmegaConf.load(CONF_DIR / "optimizer" / "gepa.yaml").instruction_proposer
    limits = dict(min_chars=guard.min_chars, max_chars=guard.max_chars,
                  max_unpunctuated_tail=guard.max_unpunctuated_tail, template_markers=list(guard.template_markers))
    reasoning = CURRENT + "\n\n## Improved Instruction\nTo improve the instruction, we need to clarify the facts."
    pasted = (CURRENT + "\n\nExample 6:\n## Inputs\n### claim\nThe film cost 600 million yuan.\n\n"
              "## Generated Outputs\n### vertical\nfilm\n\n## Feedback\nCorrect vertical 'entertainment'.")
    for text in (reasoning, pasted):
        assert proposal_problem(text, CURRENT, **limits).startswith("echoes the reflection")


def test_guard_drops_and_records_bad_proposals_and_keeps_good_ones():
    answers = {"a": "", "b": GOOD}
    guard = GuardedProposer(lambda candidate, reflective_dataset, components_to_update: answers, **LIMITS)
    kept = guard({"a": CURRENT, "b": CURRENT}, {"a": [{}], "b": [{}]}, ["a", "b"])
    assert kept == {"b": GOOD}
    assert guard.rejected == [{"component": "a", "reason": "empty", "text": ""}]


def test_guard_rejects_near_copies_of_the_parent_before_they_cost_a_minibatch():
    """The 1.5B's plain-GEPA rewrites of extract_claims were the seed minus one "(" (docs/optimize.md); the word
    diff catches those, a rule of a few words added to the instruction passes."""
    seed = "Extract every atomic claim (one fact each) from the paragraph. Keep numbers and dates exactly."
    near_copy = seed.replace("(one", "one")
    rule = seed + "\nRules learned from mistakes:\n- Never merge two facts."
    answers = iter([{"a": near_copy}, {"a": rule}])
    guard = GuardedProposer(lambda candidate, reflective_dataset, components_to_update: next(answers),
                            **LIMITS, min_changed_words=3)
    assert guard({"a": seed}, {"a": [{}]}, ["a"]) == {}
    assert guard.rejected[0]["reason"] == "a near-copy of the current instruction: 1 word(s) changed (< 3)"
    assert guard({"a": seed}, {"a": [{}]}, ["a"]) == {"a": rule}
    assert GuardedProposer(lambda **_: {"a": near_copy}, **LIMITS)({"a": seed}, {"a": [{}]}, ["a"]) == {"a": near_copy}


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


def test_fenced_proposer_sends_the_small_reflector_prompt_unless_asked_for_gepas():
    import dspy

    prompts = []

    def reflector(prompt, **kwargs):
        prompts.append(prompt)
        return [f"```\n{GOOD}\n```"]

    data = {"classify": [{"Inputs": {"text": "t"}, "Feedback": "f"}]}
    with dspy.context(lm=reflector):
        FencedProposer()({"classify": CURRENT}, data, ["classify"])
        FencedProposer(prompt="gepa")({"classify": CURRENT}, data, ["classify"])
    assert prompts[0].startswith("You improve the instruction") and "Do not ask questions" in prompts[0]
    assert prompts[1].startswith("I provided an assistant with")  # GEPA's own prompt
    with pytest.raises(ValueError, match="expected small or gepa"):
        FencedProposer(prompt="big")


def test_gepa_with_an_empty_reflector_keeps_the_instruction_and_logs_the_rejection(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=gepa", "budget.max_metric_calls=40"], empty_reflector=True))
    assert out["instructions_after"] == out["instructions_before"]
    assert out["gepa/proposals_rejected"] >= 1 and out["gepa/proposals_accepted"] == 0
    assert out["gepa/candidates"] == 1


def rules_answer(prompt, **kwargs):
    assert "<curr_param>" not in prompt and CURRENT in prompt and "feedback f" in prompt
    return ["Sure! Here are the rules:\n- Compare every year in the claim with the evidence\n"
            "2. Treat a different unit as a contradiction.\n- " + "too long " * 20]


def test_rules_proposer_appends_new_rules_to_the_instruction_and_keeps_the_seed():
    import dspy

    from factlab.optimize.proposer import RULES_HEADER, RulesProposer, split_rules

    proposer = RulesProposer(max_rules=3, max_words=30, max_total_rules=3)
    data = {"judge": [{"Inputs": {"claim": "c"}, "Feedback": "feedback f"}]}
    with dspy.context(lm=rules_answer):
        out = proposer({"judge": CURRENT}, data, ["judge"])["judge"]
        base, rules = split_rules(out)
        assert base == CURRENT and RULES_HEADER in out
        assert rules == ["Compare every year in the claim with the evidence.",
                         "Treat a different unit as a contradiction."]  # the over-long line is dropped, not cut
        again = proposer({"judge": out}, data, ["judge"])["judge"]
    assert again == out  # nothing new: the guard rejects it as identical, GEPA spends nothing on it
    assert proposal_problem(again, out, **LIMITS) == "identical to the current instruction"


def test_rules_proposer_keeps_the_newest_rules_within_its_cap():
    import dspy

    from factlab.optimize.proposer import RulesProposer, split_rules, with_rules

    current = with_rules(CURRENT, ["Old rule one.", "Old rule two."])
    with dspy.context(lm=lambda prompt, **kwargs: ["- New rule about dates.\n- New rule about units."]):
        out = RulesProposer(max_total_rules=3)({"p": current}, {"p": [{"Feedback": "feedback f"}]}, ["p"])["p"]
    assert split_rules(out) == (CURRENT, ["Old rule two.", "New rule about dates.", "New rule about units."])


def test_rules_that_send_the_student_to_the_feedback_are_dropped(caplog):
    # What the 1.5B proposed for extract_claims on 2026-12-05 (the shared gepa_rules run): every rule echoes the
    # prompt's "what the feedback expected" and the metric's wording; GEPA kept it on its minibatch.
    import dspy

    from factlab.optimize.proposer import RulesProposer

    echo = ('- When a claim is missing from the paragraph, answer with what the feedback expected instead of '
            '"Missing gold claims".\n- When a claim is not atomic, answer with what the feedback expected instead of '
            '"One fact per claim".\n- 当反馈指出遗漏时，补上遗漏的事实。')
    with dspy.context(lm=lambda prompt, **kwargs: [echo]), caplog.at_level("INFO"):
        out = RulesProposer()({"p": CURRENT}, {"p": [{"Feedback": "feedback f"}]}, ["p"])["p"]
    assert out == CURRENT
    assert proposal_problem(out, CURRENT, **LIMITS) == "identical to the current instruction"
    assert caplog.text.count("rule dropped") == 3


def test_gepa_rules_runs_and_logs_every_proposal_with_its_outcome(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=gepa_rules", "budget.max_metric_calls=50"]))
    before, after = out["instructions_before"]["classify"], out["instructions_after"]["classify"]
    assert after.startswith(before) and KEYWORD in after and KEYWORD not in before  # the seed kept, a rule added
    assert out["gepa/proposals_kept"] >= 1
    assert out["test/score_after"] > out["test/score_before"]
