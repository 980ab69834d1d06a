"""conf/optimize.yaml composes for every stage x optimizer, the optimizer configs mirror their classes, and GEPA's
knobs are dspy.GEPA's own arguments."""

from __future__ import annotations

import inspect

import dspy
import pytest
from hydra.utils import get_class, instantiate
from omegaconf import OmegaConf

from factlab.config import CONF_DIR, compose_config, config_names
from factlab.optimize import optimizers
from factlab.programs import STAGES

OPTIMIZERS = config_names("optimizer")


def test_every_optimizer_of_the_issue_has_a_config():
    assert set(OPTIMIZERS) == {"gepa", "gepa_rules", "miprov2", "bootstrap", "labeled_fewshot", "none"}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("stage", STAGES)
def test_config_composes_and_instantiates(stage, optimizer):
    cfg = compose_config("optimize", [f"stage={stage}", f"optimizer={optimizer}"])
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    assert resolved["stage"]["name"] == stage and resolved["optimizer"]["name"] == optimizer
    assert {"student", "reflector", "dataset", "tracking", "retrieval"} <= set(resolved)
    built = instantiate(cfg.optimizer)
    assert built.name == optimizer
    assert isinstance(built.uses_reflector, bool)
    assert callable(built.compile)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_optimizer_config_keys_are_the_class_arguments(optimizer):
    node = compose_config("optimize", [f"optimizer={optimizer}"]).optimizer  # with its defaults (gepa_rules: gepa)
    cls = get_class(node._target_)
    assert cls.__module__ == optimizers.__name__
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert set(node) - {"_target_"} == parameters


def test_gepa_knobs_map_one_to_one_to_dspy_gepa():
    node = OmegaConf.load(CONF_DIR / "optimizer" / "gepa.yaml")
    ours = set(node) - {"_target_", "name"}
    theirs = set(inspect.signature(dspy.GEPA.__init__).parameters)
    assert ours <= theirs, f"not dspy.GEPA arguments: {sorted(ours - theirs)}"
    cfg = compose_config("optimize", ["optimizer=gepa", "budget.max_metric_calls=123", "seed=7"])
    built = instantiate(cfg.optimizer)
    assert built.knobs["max_metric_calls"] == 123 and built.knobs["seed"] == 7
    assert built.instruction_proposer.__class__.__name__ == "GuardedProposer"


def test_gepa_rules_is_gepa_with_the_rules_proposer():
    gepa = compose_config("optimize", ["optimizer=gepa"]).optimizer
    rules = compose_config("optimize", ["optimizer=gepa_rules"]).optimizer
    differ = {key for key in gepa if gepa[key] != rules[key]}
    assert differ == {"name", "instruction_proposer"}
    built = instantiate(rules)
    assert built.instruction_proposer.inner.__class__.__name__ == "RulesProposer"


@pytest.mark.parametrize("experiment", config_names("experiment"))
def test_experiments_compose_and_override(experiment):
    cfg = compose_config("optimize", [f"experiment={experiment}", "optimizer=bootstrap"])
    plain = compose_config("optimize", ["optimizer=bootstrap"])
    assert OmegaConf.to_container(cfg) != OmegaConf.to_container(plain), f"{experiment} overrides nothing"
    assert cfg.optimizer.max_metric_calls == cfg.budget.max_metric_calls


def test_budget_is_shared_by_the_optimizers():
    calls = {name: compose_config("optimize", [f"optimizer={name}", "budget.max_metric_calls=77"])
             for name in ("gepa", "miprov2", "bootstrap")}
    assert {name: cfg.optimizer.max_metric_calls for name, cfg in calls.items()} == dict.fromkeys(calls, 77)
