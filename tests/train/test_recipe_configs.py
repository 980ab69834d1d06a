"""conf/recipe/<name>.yaml <-> factlab.train.recipes.<name>, both ways; every recipe and teacher composes."""

from __future__ import annotations

import inspect

import pytest
from hydra.utils import get_method

import factlab.train.recipes as recipes
from factlab.config import CONF_DIR, compose_config, config_names

RECIPES = config_names("recipe")


def recipe_functions() -> set[str]:
    return {name for name, fn in inspect.getmembers(recipes, inspect.isfunction)
            if fn.__module__ == recipes.__name__ and not name.startswith("_")}


def test_every_recipe_config_has_its_function_and_back():
    assert RECIPES, "no conf/recipe/*.yaml found"
    assert set(RECIPES) == recipe_functions()


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_composes_and_targets_a_function_in_factlab_train(name):
    cfg = compose_config("train", [f"recipe={name}", "tracking=off"])
    target = get_method(cfg.recipe._target_)
    assert cfg.recipe._target_ == f"factlab.train.recipes.{name}"
    assert target.__module__.startswith("factlab.train.") and inspect.isfunction(target)
    assert cfg.recipe.name == name and cfg.recipe.headline.startswith("test/")
    assert (CONF_DIR / "stage" / f"{cfg.recipe.stage.name}.yaml").is_file()
    parameters = inspect.signature(target).parameters
    assert {"job", "stage", "name", "headline"} <= set(parameters)


def test_teacher_lm_takes_its_lm_from_the_lm_group():
    cfg = compose_config("train", ["teacher=lm", "lm@teacher.lm=local_qwen05"])
    assert cfg.teacher._target_ == "factlab.train.teacher.LMTeacher"
    assert cfg.teacher.lm.name == "local_qwen05"
    assert "lm" not in compose_config("train", ["teacher=gold"]).teacher


def test_peft_is_a_config_value():
    cfg = compose_config("train", ["recipe=distill_judge", "recipe.peft.enabled=true", "recipe.peft.r=4"])
    assert cfg.recipe.peft.enabled is True and cfg.recipe.peft.r == 4
