"""The SFT warm start: tool-calling traces built from the gold and the real tool's hits, the loss on the assistant's
turns only, and a merged model folder that GRPO can start from (tiny local Qwen2; bundled RL rows)."""

from __future__ import annotations

import json

import pytest

from factlab.train.rl.grpo_trainer import load_rows
from factlab.train.rl.retrieval import search_hits
from factlab.train.rl.warm_start import trace_examples, warm_start


@pytest.fixture(scope="module")
def traces(rl_data, retrievers):
    rows = [dict(row) for row in load_rows(rl_data["files"]["train"])]
    return rows, trace_examples(rows, lambda query, corpus: search_hits(retrievers[corpus], query, 3))


def test_traces_call_the_tool_then_answer_with_gold_chunks_the_tool_returned(traces):
    rows, examples = traces
    assert examples and len(examples) % 2 == 0 and len(examples) < 2 * len(rows)  # rows the search misses are skipped
    for call, answer in zip(examples[::2], examples[1::2], strict=True):
        assert call["completion"][0]["tool_calls"][0]["function"]["name"] == "search"
        shown = answer["prompt"][-1]["content"]
        body = json.loads(answer["completion"][0]["content"].removeprefix("<answer>").removesuffix("</answer>"))
        assert body["relation"] and body["chunk_ids"] and all(f"[{chunk}]" in shown for chunk in body["chunk_ids"])
        assert json.loads(call["tools"])[0]["function"]["name"] == "search"


def test_the_loss_covers_the_assistant_turns_and_never_the_tool_text(traces, tiny_qwen):
    from transformers import AutoTokenizer

    _, examples = traces
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen)
    call, answer = examples[0], examples[1]
    tools = json.loads(call["tools"])
    for example, wanted, unwanted in ((call, "<tool_call>", "<tool_response>"), (answer, "<answer>", "<tool_call>")):
        prompt = tokenizer.apply_chat_template(example["prompt"], tools=tools, tokenize=False,
                                               add_generation_prompt=True)
        full = tokenizer.apply_chat_template(example["prompt"] + example["completion"], tools=tools, tokenize=False)
        assert full.startswith(prompt)
        completion = full[len(prompt):]
        assert wanted in completion and unwanted not in completion


@pytest.mark.slow
def test_two_sft_steps_give_a_merged_folder_that_loads_and_is_reused(traces, tiny_qwen, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    _, examples = traces
    peft = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    merged = warm_start(tiny_qwen, examples[:8], tmp_path, steps=2, learning_rate=5e-2, batch_size=2, peft=peft,
                        seed=0, max_length=4096)  # the tiny tokenizer spends a token per character or two
    meta = json.loads((merged / "warm_start.json").read_text())
    assert meta["steps"] == 2 and len(meta["loss"]) == 2 and meta["examples"] == 8
    base = AutoModelForCausalLM.from_pretrained(tiny_qwen, dtype=torch.float32).state_dict()
    tuned = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32).state_dict()
    assert set(base) == set(tuned)  # merged: no LoRA keys left
    assert any(not torch.equal(base[k], tuned[k]) for k in base if "q_proj.weight" in k)
    assert warm_start(tiny_qwen, [], tmp_path, 2, 5e-2, 2, peft, 0) == merged  # complete: reused, no training
    with pytest.raises(ValueError, match="no trace example"):
        warm_start(tiny_qwen, [], tmp_path / "other", 2, 5e-2, 2, peft, 0)
    with pytest.raises(ValueError, match="longer than max_length=64"):
        warm_start(tiny_qwen, examples[:2], tmp_path / "short", 2, 5e-2, 2, peft, 0, max_length=64)
