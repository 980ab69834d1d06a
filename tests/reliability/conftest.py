"""Fixtures of the reliability tests (helpers in reliability_support.py)."""

from __future__ import annotations

import pytest
from hydra.utils import instantiate

from factlab.config import compose_config, compose_option
from factlab.stages.build import build_program


@pytest.fixture(scope="module")
def judge_and_rules():
    """The real local 0.5B, the judge program on it and the default business rules."""
    cfg = compose_config("run_stage", ["stage=judge", "lm@student=local_qwen05"])
    return instantiate(cfg.student), build_program(cfg.stage), instantiate(compose_option("business", "default"))
