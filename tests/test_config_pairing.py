"""conf/stage/<name>.yaml <-> factlab/programs/<name>.py, both ways; every stage config composes and builds."""

from __future__ import annotations

from pathlib import Path

import dspy
import pytest

from factlab.config import CONF_DIR, compose_config, config_names
from factlab.programs import LAYER_STAGES, STAGES
from factlab.stages.build import build_program

PROGRAMS_DIR = Path(__file__).resolve().parent.parent / "factlab" / "programs"
NOT_STAGES = {"__init__"}  # programs/ holds the stage files only (shared helpers live in factlab/matching)


def test_every_stage_config_has_a_program_file_and_back():
    configs = set(config_names("stage"))
    programs = {p.stem for p in PROGRAMS_DIR.glob("*.py")} - NOT_STAGES
    assert configs == programs == set(STAGES) | set(LAYER_STAGES)


@pytest.mark.parametrize("stage", STAGES + LAYER_STAGES)
def test_stage_config_composes_and_builds(stage):
    cfg = compose_config("run_stage", [f"stage={stage}", "lm@student=local_qwen05"])
    assert cfg.stage.name == stage
    program = build_program(cfg.stage)
    assert isinstance(program, dspy.Module)
    module = __import__(f"factlab.programs.{stage}", fromlist=["metric"])
    for name in ("_score", "metric", "to_examples"):
        assert callable(getattr(module, name)), f"{stage} lacks {name}"
    assert program.__class__.__module__ == module.__name__


def test_lm_configs_never_hold_a_key():
    for path in (CONF_DIR / "lm").glob("*.yaml"):
        text = path.read_text()
        assert "api_key:" not in text, f"{path} must name an env var (api_key_env), never a key"
