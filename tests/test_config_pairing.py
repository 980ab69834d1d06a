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


CHECKERS_DIR = PROGRAMS_DIR.parent / "checkers"
# factlab/checkers/ beside the checkers: the interface, the one build call, the job, and the parts every checker is
# made of (the shared flow, the label policy, the document layers and the logic layer)
CHECKER_PARTS = {"__init__", "base", "build", "job", "flow", "verdict", "layers", "logic", "strength", "scope", "veto"}


def _targets(node, at: str = "") -> list[tuple[str, str]]:
    """(key path, _target_) of every node of a resolved config tree."""
    if isinstance(node, dict):
        here = [(at, node["_target_"])] if "_target_" in node else []
        return here + [t for k, v in node.items() for t in _targets(v, f"{at}.{k}" if at else str(k))]
    if isinstance(node, list):
        return [t for i, v in enumerate(node) for t in _targets(v, f"{at}[{i}]")]
    return []


def test_every_checker_config_has_its_module_and_back():
    assert set(config_names("checker")) == {p.stem for p in CHECKERS_DIR.glob("*.py")} - CHECKER_PARTS


@pytest.mark.parametrize("checker", config_names("checker"))
def test_a_checker_config_builds_its_own_class_from_parts_that_resolve(checker):
    from hydra.utils import get_object
    from omegaconf import OmegaConf

    cfg = compose_config("verify", ["input=x", "sources=y", f"checker={checker}"])
    node = OmegaConf.to_container(cfg.checker, resolve=True)
    target = node["_target_"] if checker != "nearline" else node["inner"]["_target_"]  # nearline: a job over one
    assert checker == "nearline" or target.startswith(f"factlab.checkers.{checker}.")
    targets = _targets(node)
    assert len(targets) >= 5  # the checker and its parts: stages, retriever, verdict, layers, ...
    for at, path in targets:
        assert get_object(path) is not None, f"checker={checker}: {at}._target_ {path} does not resolve"


@pytest.mark.parametrize("group,option", [(g, o) for g in ("logic", "paragraph_typer") for o in config_names(g)])
def test_the_layer_options_compose_into_the_layers(group, option):
    from omegaconf import OmegaConf

    cfg = compose_config("verify", ["input=x", "sources=y", f"{group}={option}"])
    layers = OmegaConf.to_container(cfg.layers, resolve=True)
    part = layers["logic" if group == "logic" else "typer"]
    assert (part is None) == (option in ("off", "rules") and (group == "paragraph_typer" or option == "off"))
