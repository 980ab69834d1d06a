"""Cost accounting of a pipeline: per stage, its own LM handle (own call history) and its wall-clock seconds."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from factlab.models.errors import note_failure
from factlab.models.lm import LMHandle
from factlab.pipeline.trace import PIPELINE_STAGES
from factlab.programs import LAYER_STAGES

logger = logging.getLogger(__name__)


def stage_student(student: LMHandle, lora: str | None, stage: str) -> LMHandle:
    """The LM a stage with adapter `lora` runs on: the student served with it, or the student as it is when `lora`
    is a shipped adapter trained on another base model (the 1.5B, a remote endpoint, a test's scripted LM; logged).

    Raises:
        ValueError: an adapter given by path for a student that is not a local GGUF model (LMHandle.with_lora).
    """
    from factlab.models.lora import shipped_base

    if not lora:
        return student
    base = shipped_base(lora)
    if base is not None and Path(str(student.info.get("file", ""))).name != base:
        logger.warning("stage %s: its adapter %s was trained on %s; the student %s runs the stage as it is",
                       stage, lora, base, student.info.get("model", student.name))
        return student
    return student.with_lora(lora)


class StageMeter:
    """Per-stage LM handles (own call history each) and wall-clock latency, for cost accounting.

    `adapters` maps a stage to its own LoRA adapter (conf/stage/<name>.yaml `lora`): that stage runs on the student
    served with it, one llama.cpp server per distinct adapter, shared by the stages that name the same one. A shipped
    adapter serves only the base model it was trained on (its adapter.json): with another student (the 1.5B, a remote
    endpoint, a test's scripted LM) the stage runs on that student as it is, and the log says so once.
    """

    def __init__(self, student: LMHandle | None, adapters: Mapping[str, str] | None = None) -> None:
        self.handles = {s: student.fork(s) for s in (*PIPELINE_STAGES, *LAYER_STAGES)} if student else {}
        served: dict[str, LMHandle] = {}
        for stage, lora in (adapters or {}).items():
            if not lora or student is None:
                continue
            if lora not in served:
                served[lora] = stage_student(student, lora, stage)
            self.handles[stage] = served[lora].fork(stage)
        self.seconds: dict[str, float] = defaultdict(float)
        self.items: dict[str, int] = defaultdict(int)

    def call(self, stage: str, fn: Callable[..., Any], **kwargs) -> Any:
        """Run one stage call on the stage's LM handle; a failure trips the LM's breaker when the server is down (the
        next calls then fail at once) and drops an unparsable answer from the LM cache, then propagates."""
        start = time.perf_counter()
        handle = self.handles.get(stage)
        breaker = handle.breaker if handle is not None else None
        try:
            if breaker is not None:
                breaker.check()
            if handle is not None:
                with handle.context():
                    return fn(**kwargs)
            return fn(**kwargs)
        except Exception as exc:
            note_failure(stage, exc, breaker)
            raise
        finally:
            self.seconds[stage] += time.perf_counter() - start
            self.items[stage] += 1

    def costs(self) -> dict[str, dict[str, float]]:
        out = {}
        for stage in (*PIPELINE_STAGES, *(s for s in LAYER_STAGES if self.items[s])):  # a layer stage once used
            usage = self.handles[stage].usage() if stage in self.handles else {}
            out[stage] = {"items": self.items[stage], "seconds": round(self.seconds[stage], 3), **usage}
        return out
