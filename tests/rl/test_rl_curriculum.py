"""The RL curriculum: the train rows whose gold chunk one search of the claim finds come first (real retriever over
the bundled RL corpus, hashing encoder + BM25), and the zero-weight reward parts that log accuracy and search rate."""

from __future__ import annotations

import pytest

from factlab.train.rl.curriculum import LEVELS, order_rows, retriever_search, row_level
from factlab.train.rl.grpo_trainer import load_rows
from factlab.train.rl.trl_rewards import component_reward


def test_one_search_rows_come_first_and_really_are_found_by_one_search(rl_data, retrievers):
    rows = [dict(row) for row in load_rows(rl_data["files"]["train"])]
    search = retriever_search(retrievers)
    ordered, counts = order_rows(rows, search, 3, "one_search_first")
    assert sum(counts.values()) == len(rows) == len(ordered) and counts["one_search"] > 0 and counts["hard"] > 0
    levels = [row["extra_info"]["curriculum"] for row in ordered]
    assert levels == sorted(levels, key=LEVELS.index)  # easiest level first
    for row in ordered[: counts["one_search"]]:
        corpus = row["extra_info"]["tools_kwargs"]["search"]["create_kwargs"]["corpus"]
        found = set(search(row["extra_info"]["claim"], corpus, 3))
        assert found & set(row["reward_model"]["ground_truth"]["chunk_ids"])
        assert not row["extra_info"]["multi_hop"]
    assert all(row_level(row, search, 3) == "hard" for row in ordered if row["extra_info"]["multi_hop"]
               and row["reward_model"]["ground_truth"]["chunk_ids"])
    only, _ = order_rows(rows, search, 3, "one_search_only")
    assert len(only) == counts["one_search"]


def test_a_level_is_in_a_seeded_random_order_not_the_splits_sorted_one():
    """The split is sorted by case id (English cases first): a level in that order gave GRPO one language."""
    rows = [{"extra_info": {"claim": f"{lang}{i}", "lang": lang, "multi_hop": False, "tools_kwargs": {"search": {
        "create_kwargs": {"corpus": "k"}}}}, "reward_model": {"ground_truth": {"chunk_ids": ["g#p1-c1"]}}}
        for lang in ("en", "zh") for i in range(8)]
    claims = {seed: [r["extra_info"]["claim"] for r in order_rows(rows, lambda q, c, k: ["g#p1-c1"], 3,
                                                                   "one_search_first", seed=seed)[0]]
              for seed in (0, 1)}
    assert sorted(claims[0]) == sorted(claims[1]) and claims[0] != claims[1]
    assert claims[0] == [r["extra_info"]["claim"] for r in order_rows(rows, lambda q, c, k: ["g#p1-c1"], 3,
                                                                       "one_search_first", seed=0)[0]]
    assert {claim[:2] for claim in claims[0][:4]} == {"en", "zh"}  # both languages among the first steps


def test_an_unknown_order_or_an_empty_easy_level_is_a_clear_error(rl_data):
    rows = [dict(row) for row in load_rows(rl_data["files"]["train"], limit=3)]
    with pytest.raises(ValueError, match="curriculum.order='easy'"):
        order_rows(rows, lambda q, c, k: [], 3, "easy")
    with pytest.raises(ValueError, match="no train claim's gold chunk"):
        order_rows(rows, lambda q, c, k: [], 3, "one_search_only")
    assert order_rows(rows, lambda q, c, k: 1 / 0, 3, "none") == (rows, {})  # no search at all


def test_component_rewards_log_the_verdict_and_whether_the_rollout_searched():
    gt = {"ground_truth": {"relation": "contradict", "label": "wrong", "chunk_ids": []}}
    searched = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
        "name": "search", "arguments": {"query": "x"}}}]}, {"role": "tool", "content": "[a#p1-c1] (tier 1) y"},
        {"role": "assistant", "content": '<answer>{"relation": "contradict"}</answer>'}]
    guessed = [{"role": "assistant", "content": '<answer>{"relation": "support"}</answer>'}]
    args = ([[]] * 2, [searched, guessed], ["factlab/bundled"] * 2, [gt, gt], [{}, {}])
    verdict = component_reward("verdict", "acc", 0.1, 0.0)
    search_rate = component_reward("searched", "searched", 0.1, 0.0)
    assert verdict(*args) == [1.0, 0.0] and search_rate(*args) == [1.0, 0.0]
    assert verdict.__name__ == "verdict"  # TRL logs rewards/<function name>/mean
