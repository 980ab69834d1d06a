"""An SFT warm start for the search-checker RL: teach the policy the tool-calling format before GRPO.

GRPO learns only from differences inside a group of rollouts. When no rollout of a group calls the tool (the 0.5B
coder model answers at once), nothing in the reward pushes toward searching, however long it trains (docs/rl.md).
So, before GRPO, a few LoRA SFT steps on traces built from the gold: for a train claim whose gold chunk one search
of its own text finds (curriculum level `one_search`), the trace is

1. the row's prompt (system + claim) -> the assistant calls `search` with the claim as the query;
2. that prompt, the call and the tool's real answer (the same hits the GRPO tool returns, `search_hits` +
   `format_hits`) -> the assistant answers `<answer>{"relation", "label", "chunk_ids"}</answer>` with the gold
   relation and label and the gold chunks among the hits.

Each step is its own prompt-completion example, so the loss is on the assistant's turns only (never on the tool's
text). The tools' schema is the one GRPO's environment shows (`SEARCH_TOOL_SCHEMA`). The adapter is merged into
the base weights, and GRPO then trains a fresh LoRA on the merged folder (`recipe.warm_start`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from factlab.train.rl.format import SEARCH_TOOL_SCHEMA, TOOL_NAME, format_hits

logger = logging.getLogger(__name__)


def answer_text(ground_truth: Mapping, hit_ids: Sequence[str]) -> str:
    """The gold answer in the policy's format: relation, label and the gold chunks that the search returned.

    >>> answer_text({"relation": "support", "label": "correct", "chunk_ids": ["a#p1-c1", "b#p1-c1"]}, ["a#p1-c1"])
    '<answer>{"relation": "support", "label": "correct", "chunk_ids": ["a#p1-c1"]}</answer>'
    """
    body = {"relation": ground_truth.get("relation"), "label": ground_truth.get("label"),
            "chunk_ids": [chunk for chunk in ground_truth.get("chunk_ids") or [] if chunk in set(hit_ids)]}
    return f"<answer>{json.dumps({k: v for k, v in body.items() if v is not None}, ensure_ascii=False)}</answer>"


def trace_examples(rows: Sequence[Mapping], hits: Callable[[str, str], list[dict]]) -> list[dict]:
    """Two prompt-completion examples per row that has a gold relation and whose gold chunk the claim's own search
    returns (other rows are skipped: their trace would teach a guess).

    Args:
        rows: RL rows (`factlab.train.rl.data.verl_rows`).
        hits: (query, corpus key) -> the tool's hits (`factlab.train.rl.retrieval.search_hits` dicts).

    >>> row = {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "c"}],
    ...        "reward_model": {"ground_truth": {"relation": "support", "label": "correct", "chunk_ids": ["a#p1-c1"]}},
    ...        "extra_info": {"claim": "c", "tools_kwargs": {"search": {"create_kwargs": {"corpus": "k"}}}}}
    >>> call, answer = trace_examples([row], lambda q, corpus: [{"chunk_id": "a#p1-c1", "tier": 1, "text": "t"}])
    >>> call["completion"][0]["tool_calls"][0]["function"]
    {'name': 'search', 'arguments': {'query': 'c'}}
    >>> answer["prompt"][-1]
    {'role': 'tool', 'name': 'search', 'content': '[a#p1-c1] (tier 1) t'}
    >>> answer["completion"][0]["content"]
    '<answer>{"relation": "support", "label": "correct", "chunk_ids": ["a#p1-c1"]}</answer>'
    """
    out = []
    for row in rows:
        truth, info = row["reward_model"]["ground_truth"], row["extra_info"]
        if not truth.get("relation") or not truth.get("chunk_ids"):
            continue
        query, corpus = info["claim"], info["tools_kwargs"][TOOL_NAME]["create_kwargs"]["corpus"]
        found = hits(query, corpus)
        ids = [hit["chunk_id"] for hit in found]
        if not set(ids) & set(truth["chunk_ids"]):
            continue
        prompt = [dict(message) for message in row["prompt"]]
        call = {"role": "assistant", "content": "",
                "tool_calls": [{"type": "function", "function": {"name": TOOL_NAME, "arguments": {"query": query}}}]}
        tool = {"role": "tool", "name": TOOL_NAME, "content": format_hits(found)}
        tools = json.dumps([SEARCH_TOOL_SCHEMA])  # a string: TRL reads it back (json.loads); Arrow keeps it as is
        out.append({"prompt": prompt, "completion": [call], "tools": tools})
        out.append({"prompt": [*prompt, call, tool],
                    "completion": [{"role": "assistant", "content": answer_text(truth, ids)}], "tools": tools})
    return out


def fitting(examples: Sequence[dict], tokenizer, max_length: int) -> list[dict]:
    """The examples whose whole conversation fits `max_length` tokens (TRL would cut a longer one before its
    completion and drop it as fully masked); the dropped count is logged.

    Raises:
        ValueError: none fits.
    """
    kept = []
    for example in examples:
        tools = json.loads(example["tools"]) if isinstance(example.get("tools"), str) else example.get("tools")
        ids = tokenizer.apply_chat_template(example["prompt"] + example["completion"], tools=tools, tokenize=True,
                                            return_dict=True)["input_ids"]
        if len(ids) <= max_length:
            kept.append(example)
    if len(kept) < len(examples):
        logger.warning("warm start: %d of %d trace examples are longer than %d tokens and are left out",
                       len(examples) - len(kept), len(examples), max_length)
    if not kept:
        raise ValueError(f"recipe.warm_start: every trace example is longer than max_length={max_length} tokens")
    return kept


def warm_start(model_path: str | Path, examples: Sequence[dict], out_dir: Path, steps: int, learning_rate: float,
               batch_size: int, peft: Mapping, seed: int, max_length: int = 1024) -> Path:
    """LoRA SFT on the trace examples for `steps` steps, merged into the base weights, saved under
    `<out_dir>/merged` (reused when it is already complete).

    Returns:
        The merged model folder (what GRPO trains next).

    Raises:
        ValueError: no trace example.
    """
    merged = out_dir / "merged"
    if (merged / "COMPLETE").exists():
        logger.info("warm start: reusing %s", merged)
        return merged
    if not examples:
        raise ValueError("recipe.warm_start: no trace example (no train claim has a gold relation and a gold chunk "
                         "that one search of the claim finds); lower warm_start.steps to 0 or use another dataset")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    from datasets import Dataset

    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    examples = fitting(examples, tokenizer, max_length)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=peft["r"], lora_alpha=peft["alpha"],
                                             lora_dropout=peft["dropout"], target_modules=list(peft["target_modules"])))
    args = SFTConfig(output_dir=str(out_dir / "sft"), max_steps=steps, per_device_train_batch_size=batch_size,
                     learning_rate=learning_rate, logging_steps=1, save_strategy="no", report_to="none", seed=seed,
                     use_cpu=True, bf16=False, max_length=max_length, completion_only_loss=True,
                     dataloader_num_workers=0, dataset_num_proc=None)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(list(examples)),
                         processing_class=tokenizer)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    model = trainer.model.merge_and_unload()
    merged.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(merged)
    tokenizer.save_pretrained(merged)
    (merged / "warm_start.json").write_text(json.dumps({"steps": steps, "examples": len(examples), "loss": losses,
                                                        "base": str(model_path)}, indent=2))
    (merged / "COMPLETE").write_text(str(steps))
    return merged
