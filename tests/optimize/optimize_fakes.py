"""Deterministic fake LMs for the optimizer tests (instantiated from config, like conf/lm/*.yaml builders).

- `rule_student`: a dspy.LM whose engine answers the checkworthy stage with the GOLD flag only when the
  instruction (system prompt) contains KEYWORD or the prompt carries demos; otherwise it always says False.
  Every real (non-cached) call is recorded in `ENGINE_CALLS` so tests can check nothing was asked twice.
- `dummy_reflector`: DSPy's DummyLM proposing an instruction that contains KEYWORD (or an empty one), answering
  GEPA's fenced prompt and MIPROv2's proposer fields alike; its answers are cacheable like a real LM's.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.utils.dummies import DummyLM
from omegaconf import OmegaConf

from factlab.config import compose_config
from factlab.data.registry import load_dataset
from factlab.models.lm import LMHandle
from factlab.stages.examples import stage_examples

KEYWORD = "CHECKWORTHY-RULEBOOK"
PROPOSAL = (f"Decide, following the {KEYWORD}, whether the text states a checkable fact about the world, such as "
            "a number, a date, an event or an attribution. Opinions and greetings are not check-worthy.")
ENGINE_CALLS: list[str] = []  # sha1 of every request the fake student really answered, in order
INTERRUPT = {"after": None}  # raise KeyboardInterrupt once this many real calls were answered (resume tests)
_TEXT = re.compile(r"\[\[ ## text ## \]\]\n(.*?)\n\n(?:\[\[ ## |Respond with)", re.DOTALL)


class RuleEngine:
    """A custom DSPy engine (complete(Request) -> Response) implementing the student's rule."""

    def __init__(self, gold: dict[str, bool], keyword: str) -> None:
        self.gold = gold
        self.keyword = keyword

    def complete(self, request) -> Response:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or ())
        user_turns = [m for m in request.messages if m.role == "user"]
        prompt = system + "\n".join(m.text or "" for m in request.messages)
        if INTERRUPT["after"] is not None and len(ENGINE_CALLS) >= INTERRUPT["after"]:
            raise KeyboardInterrupt(f"fake interrupt after {INTERRUPT['after']} LM calls")
        ENGINE_CALLS.append(hashlib.sha1(prompt.encode()).hexdigest())
        match = _TEXT.search(user_turns[-1].text or "")
        text = match.group(1).strip() if match else ""
        knows = self.keyword in system or len(user_turns) > 1  # the instruction names the rulebook, or demos
        flag = self.gold.get(text, False) if knows else False
        answer = f"[[ ## checkworthy ## ]]\n{flag}\n\n[[ ## reason ## ]]\nrule\n\n[[ ## completed ## ]]"
        return Response(id=None, model="fake-student", message=Message.assistant([TextPart(answer)]),
                        finish_reason="stop",
                        usage=Usage(input_tokens=len(prompt) // 4, output_tokens=12,
                                    total_tokens=len(prompt) // 4 + 12))

    def stream(self, request):
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def rule_student(name: str, keyword: str, dataset: dict, **ignored) -> LMHandle:
    """The fake student: gold checkworthy flags of `dataset` (a conf/dataset node) behind the keyword rule.

    `ignored` takes the other keys of a conf/lm node, so a CLI override of `student._target_` works.
    """
    cases = load_dataset(dataset).cases
    gold: dict[str, bool] = {}
    for example in stage_examples(cases, "checkworthy"):
        gold.setdefault(example.text.strip(), bool(example.checkworthy))
    lm = dspy.LM("fake/rule-student", engine=RuleEngine(gold, keyword), cache=True,
                 num_retries=0)
    return LMHandle(name, lm, dspy.ChatAdapter(), {"backend": "fake", "model": "rule-student"})


class CachedDummyLM(DummyLM):
    """DummyLM whose answers go through DSPy's response cache like a real LM's."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._cache_responses = True


def dummy_reflector(name: str, keyword: str, empty: bool = False) -> LMHandle:
    """The fake reflector: proposes PROPOSAL (fenced, for GEPA; plain, for MIPROv2's proposer fields)."""
    proposal = "" if empty else PROPOSAL.replace(KEYWORD, keyword)
    lm = CachedDummyLM({
        "I provided an assistant with": {"new_instruction": f"```\n{proposal}\n```"},  # GEPA's prompt (prompt: gepa)
        "You improve the instruction": {"new_instruction": f"```\n{proposal}\n```"},  # REWRITE_PROMPT (the default)
        "An assistant follows this instruction": {"rules": f"- Follow the {keyword} for every sentence." if proposal
                                                  else ""},  # RulesProposer's prompt
        "": {"proposed_instruction": proposal, "program_description": "Classifies sentences.",
             "module_description": "Flags check-worthy sentences.", "summary": "Sentences with flags.",
             "observations": "Sentences in English and Chinese.", "new_instruction": proposal},
    })
    return LMHandle(name, lm, dspy.ChatAdapter(), {"backend": "fake", "model": "dummy-reflector"})


def fake_config(tmp_path: Path, overrides: list[str], tracking: bool = False, empty_reflector: bool = False):
    """conf/optimize.yaml for stage checkworthy with the fake student / reflector and small splits."""
    cfg = compose_config("optimize", [
        "stage=checkworthy", f"tracking={'mlflow' if tracking else 'off'}", "dataset.max_rows=6",
        "max_examples.train=24", "max_examples.val=10", "max_examples.test=10", "eval.num_threads=1",
        f"runs_dir={tmp_path / 'runs'}", f"cache_dir={tmp_path / 'cache' / 'dspy'}",
        "metric.retrieve.enabled=false", *overrides,
    ])
    if tracking:
        cfg.tracking.tracking_uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
        cfg.tracking.artifact_root = str(tmp_path / "mlruns" / "artifacts")
    cfg.student = OmegaConf.create({"_target_": "optimize_fakes.rule_student", "_recursive_": False,
                                    "name": "fake_student",
                                    "keyword": KEYWORD, "dataset": OmegaConf.to_container(cfg.dataset)})
    cfg.reflector = OmegaConf.create({"_target_": "optimize_fakes.dummy_reflector", "name": "fake_reflector",
                                      "keyword": KEYWORD, "empty": empty_reflector})
    return cfg
