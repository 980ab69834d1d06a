"""A scripted LM for golden runs of the LM checkers: DSPy's DummyLM answering every stage's signature by fixed rules
over the prompt's own input fields (no model, no randomness), so a run's cards are a pure function of the code.

It is wiring, not a judge: the rules are crude on purpose (a sentence with a digit is check-worthy, a claim is its
sentence, a snippet that shares the claim's words and numbers supports it, one with other numbers contradicts it).
"""

from __future__ import annotations

import json
import re

import dspy
from dspy.utils.dummies import DummyLM

from factlab.matching.segment import sentence_spans
from factlab.models.lm import LMHandle

_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", re.S)
_OUTPUTS = re.compile(r"Your output fields are:\n(.*?)(?:\n\n|\Z)", re.S)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"[a-z]{4,}|[\u4e00-\u9fff]{2}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _sentences(text: str) -> list[str]:
    return [text[a:b].strip() for a, b in sentence_spans(text) if text[a:b].strip()]


def _judge(claim: str, evidence: str) -> str:
    shared = _words(claim) & _words(evidence)
    if len(shared) < max(2, len(_words(claim)) // 3):
        return "irrelevant"
    numbers, found = set(_NUMBER.findall(claim)), set(_NUMBER.findall(evidence))
    if numbers and not numbers <= found:
        return "contradict" if found else "insufficient"
    return "support"


def answer(inputs: dict[str, str], outputs: list[str]) -> dict:
    """The scripted answer to one call: the output fields from the input fields."""
    text = inputs.get("text") or inputs.get("claim") or inputs.get("paragraph") or ""
    rules = {
        "checkworthy": lambda: bool(_NUMBER.search(text)) or len(text) > 60,
        "reason": lambda: "scripted",
        "claims": lambda: _sentences(inputs.get("paragraph", "")),
        "reviewed_claims": lambda: json.loads(inputs.get("claims") or "[]"),
        "vertical": lambda: "medical" if re.search(r"patient|drug|dose|患者|药", text) else "general",
        "confidence": lambda: "0.8",
        "queries": lambda: [text, " ".join(sorted(_words(text)))[:60]],
        "relation": lambda: _judge(inputs.get("claim", ""), inputs.get("evidence", "")),
        "same_topic": lambda: False,
        "paragraph_type": lambda: "results",
        "verdict": lambda: "sound",
        "keyword": lambda: "",
    }
    return {name: rules[name]() for name in outputs}


class ScriptedLM(DummyLM):
    def __init__(self) -> None:
        super().__init__([], follow_examples=True, adapter=dspy.JSONAdapter())

    def _use_example(self, messages):
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        block = _OUTPUTS.search(system)
        outputs = re.findall(r"`(\w+)`", block.group(1)) if block else []
        inputs = {name: value.strip() for name, value in _FIELD.findall(messages[-1]["content"])}
        return self._format_answer_fields(answer(inputs, outputs))


def scripted_lm(**_ignored) -> LMHandle:
    """The student of a golden run (`student._target_=scripted_lm.scripted_lm`): every config field ignored."""
    return LMHandle("scripted", ScriptedLM(), dspy.JSONAdapter(), info={"name": "scripted"})
