"""`compute_score` (factlab/train/rl/reward.py) as TRL reward functions: the whole reward the GRPOTrainer trains on
(`verl_reward`) and its parts at weight 0 (`component_reward`), which TRL only logs: the verdict, search-call and
answer-rate curves (`CURVES`). A rollout's messages are rendered as the text VERL's reward sees (`render_completion`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from factlab.train.rl.format import searched
from factlab.train.rl.reward import compute_score
from factlab.train.rl.rollouts import RolloutLog


def render_completion(completion: str | Sequence[Mapping]) -> str:
    """A TRL completion (text, or the assistant / tool messages of a tool-calling rollout) as the text VERL's reward
    sees: tool calls as `<tool_call>{json}</tool_call>`, tool results as `<tool_response>...</tool_response>`.

    >>> text = render_completion([{"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    ...     "function": {"name": "search", "arguments": {"query": "x"}}}]}, {"role": "tool", "content": "[a] t"},
    ...     {"role": "assistant", "content": "<answer>{}</answer>"}])
    >>> print(text)
    <tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>
    <tool_response>[a] t</tool_response>
    <answer>{}</answer>
    """
    if isinstance(completion, str):
        return completion
    parts = []
    for message in completion:
        if message.get("role") == "tool":
            parts.append(f"<tool_response>{message.get('content') or ''}</tool_response>")
            continue
        content = message.get("content") or ""
        if isinstance(content, list):  # structured content blocks
            content = "".join(block.get("text", "") for block in content if isinstance(block, Mapping))
        calls = [json.dumps({"name": call["function"]["name"], "arguments": call["function"]["arguments"]},
                            ensure_ascii=False) for call in message.get("tool_calls") or []]
        parts.append(content + "".join(f"<tool_call>{call}</tool_call>" for call in calls))
    return "\n".join(part for part in parts if part)


# The parts of the reward TRL logs per step and at evaluation (weight-0 reward functions), with their plot titles.
CURVES = {"verdict": "verdict accuracy", "searched": "search-call rate", "answered": "answer rate"}


def verl_reward(format_weight: float, recall_weight: float, business: str = "default",
                log: RolloutLog | None = None) -> Callable:
    """`compute_score` as a TRL reward function over a batch (its name is what TRL logs: rewards/verl_reward);
    every scored rollout goes to `log` when given."""
    return component_reward("verl_reward", "score", format_weight, recall_weight, business, log=log)


def component_reward(name: str, part: str, format_weight: float, recall_weight: float,
                     business: str = "default", log: RolloutLog | None = None) -> Callable:
    """One part of `compute_score` (`score`: the whole reward; `acc`: the verdict; `searched`: 1 when the rollout
    called the tool; `answered`: 1 when it ended with an answer naming a known relation) as a TRL reward function
    named `name`. Given weight 0 in `reward_weights`, it trains nothing, and TRL logs its mean per step and at
    evaluation (`rewards/<name>/mean`): the accuracy, search-call and answer-rate curves.

    >>> acc = component_reward("verdict", "acc", 0.1, 0.1)
    >>> acc(None, ['<answer>{"relation": "support"}</answer>'], ["x"],
    ...     [{"ground_truth": {"relation": "support", "label": "correct", "chunk_ids": []}}], [{}])
    [1.0]
    """
    def reward(prompts, completions, data_source, reward_model, extra_info, **kwargs) -> list[float]:
        out = []
        for completion, source, model, info in zip(completions, data_source, reward_model, extra_info, strict=True):
            text = render_completion(completion)
            if part == "searched":
                out.append(1.0 if searched(text) else 0.0)
                continue
            parts = compute_score(source, text, model["ground_truth"], info, format_weight=format_weight,
                                  recall_weight=recall_weight, business=business)
            if log is not None:
                log.add(info or {}, parts, searched(text), text)
            out.append(float(parts[part]))
        return out

    reward.__name__ = name
    return reward
