"""The RL reward of the search checker, with VERL's signature; plugged by path
(`reward.custom_reward_function.path=pkg://factlab.train.rl.reward`) and wrapped for TRL by
factlab/train/rl/trl_rewards.py.

    score = (1 - format_weight - recall_weight) * verdict + format_weight * format + recall_weight * recall

- verdict: the judge's own scoring core (`factlab.programs.judge._score`: 1 for the gold relation, 0.5 for a near
  miss) averaged with the label match, the label being the one the business rules (`conf/business/<business>.yaml`,
  the recipe's `business`) give the answered relation when the answer names none: one definition of "right" for
  eval, GEPA and RL.
- format: half for a parseable `<answer>{json}</answer>` with a known relation, half for having searched.
- recall: share of the gold evidence chunk ids the answer cites (its weight moves to the verdict when the claim has
  no gold chunk ids).

Pure: the same inputs always give the same score (the rules are composed once per business from the repo's YAML).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from factlab.schema import LABELS, Evidence, Judgment, normalise_relation
from factlab.train.rl.format import parse_answer, searched


@functools.cache
def _rules(business: str):
    from hydra.utils import instantiate

    from factlab.config import compose_option

    return instantiate(compose_option("business", business))


def label_for_relation(relation: str, vertical: str = "general", business: str = "default") -> str:
    """The label the business rules `business` give one tier-1 snippet judged `relation` at full confidence.

    >>> [label_for_relation(r) for r in ("support", "contradict", "partial_support", "insufficient")]
    ['correct', 'wrong', 'disputed', 'unverifiable']
    """
    snippet = Evidence(source_id="answer", chunk_id="answer#p1-c1", text="", tier=1)
    return _rules(business).decide(vertical, [(snippet, Judgment(relation, 1.0))]).label


def _relation(value) -> str | None:
    try:
        return normalise_relation(value) if isinstance(value, str) else None
    except ValueError:
        return None


def relation_score(gold: str, got: str | None) -> float:
    """The judge stage's scoring core on one relation pair (full credit, 0.5 for a near miss, else 0).

    >>> [relation_score("support", got) for got in ("support", "partial_support", None)]
    [1.0, 0.5, 0.0]
    """
    import dspy

    from factlab.programs.judge import _score

    return _score(dspy.Example(relation=gold), dspy.Prediction(relation=got))[0]


def compute_score(data_source: str, solution_str: str, ground_truth: Mapping, extra_info: Mapping | None = None,
                  format_weight: float = 0.1, recall_weight: float = 0.0, business: str = "default") -> dict:
    """Score one rollout (VERL's custom reward signature; extra keyword arguments come from `reward_kwargs`).

    Args:
        data_source: the row's `data_source` (unused: every source is scored alike).
        solution_str: the decoded response: tool calls, tool responses and the final `<answer>{json}</answer>`.
        ground_truth: `{"relation", "label", "chunk_ids"}` of the claim (relation or label may be None).
        extra_info: the row's extra info; its `vertical` picks the rules' vertical (default "general").
        format_weight: weight of the format term.
        recall_weight: weight of gold-evidence recall.
        business: the business rules (conf/business/<name>.yaml) that turn a relation into a label.

    Returns:
        `score` plus its parts (`acc` = verdict, `format`, `recall`) and `answered` (1 for an answer naming a known
        relation; weight 0), all floats, as VERL logs them.

    >>> gt = {"relation": "support", "label": "correct", "chunk_ids": ["a#p1-c1"]}
    >>> compute_score("x", '<tool_call>{}</tool_call><answer>{"relation": "support"}</answer>', gt)["score"]
    1.0
    >>> compute_score("x", "I think it is true.", gt)["score"]
    0.0
    """
    if format_weight < 0.0 or recall_weight < 0.0 or format_weight + recall_weight > 1.0:
        raise ValueError(f"reward weights: format_weight ({format_weight}) and recall_weight ({recall_weight}) must "
                         "be >= 0 and sum to at most 1")
    vertical = str((extra_info or {}).get("vertical") or "general")
    answer = parse_answer(solution_str)
    relation = _relation(answer.get("relation")) if answer else None
    label = answer.get("label") if answer else None
    if label not in LABELS:
        label = label_for_relation(relation, vertical, business) if relation else None
    gold_relation = _relation(ground_truth.get("relation"))
    gold_label = ground_truth.get("label") or (label_for_relation(gold_relation, vertical, business)
                                                if gold_relation else None)
    if gold_relation is None and gold_label is None:
        raise ValueError(f"ground_truth {dict(ground_truth)!r}: expected a relation or a label")
    parts = []
    if gold_relation is not None:
        parts.append(relation_score(gold_relation, relation))
    if gold_label is not None:
        parts.append(1.0 if label == gold_label else 0.0)
    verdict = sum(parts) / len(parts)
    form = 0.5 * (relation is not None) + 0.5 * searched(solution_str)
    gold_ids = [str(x) for x in (ground_truth.get("chunk_ids") if ground_truth.get("chunk_ids") is not None else [])]
    cited = set(answer.get("chunk_ids") or []) if answer and isinstance(answer.get("chunk_ids"), list) else set()
    recall = len(cited & set(gold_ids)) / len(gold_ids) if gold_ids else None
    weight_recall = recall_weight if recall is not None else 0.0
    score = (1.0 - format_weight - weight_recall) * verdict + format_weight * form + weight_recall * (recall or 0.0)
    return {"score": round(score, 6), "acc": verdict, "format": form, "recall": -1.0 if recall is None else recall,
            "answered": float(relation is not None)}
