"""Cost accounting of a pipeline: per stage, its own LM handle (own call history) and its wall-clock seconds."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from factlab.models.lm import LMHandle
from factlab.pipeline.trace import PIPELINE_STAGES


class StageMeter:
    """Per-stage LM handles (own call history each) and wall-clock latency, for cost accounting."""

    def __init__(self, student: LMHandle | None) -> None:
        self.handles = {s: student.fork(s) for s in PIPELINE_STAGES} if student else {}
        self.seconds: dict[str, float] = defaultdict(float)
        self.items: dict[str, int] = defaultdict(int)

    def call(self, stage: str, fn: Callable[..., Any], **kwargs) -> Any:
        start = time.perf_counter()
        try:
            if stage in self.handles:
                with self.handles[stage].context():
                    return fn(**kwargs)
            return fn(**kwargs)
        finally:
            self.seconds[stage] += time.perf_counter() - start
            self.items[stage] += 1

    def costs(self) -> dict[str, dict[str, float]]:
        out = {}
        for stage in PIPELINE_STAGES:
            usage = self.handles[stage].usage() if stage in self.handles else {}
            out[stage] = {"items": self.items[stage], "seconds": round(self.seconds[stage], 3), **usage}
        return out
