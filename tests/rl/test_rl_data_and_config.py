"""Data prep -> verl's RLHFDataset; the composed VERL config -> verl's own validation; the recipe's no-GPU refusal."""

from __future__ import annotations

import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from factlab.config import CONF_DIR, compose_config
from factlab.train.rl.format import SEARCH_TOOL_SCHEMA, TOOL_NAME
from factlab.train.rl.search_r1 import (
    TOOL_CONFIG,
    NoGPUError,
    compose_verl_config,
    require_gpus,
    validate_verl_config,
    verl_overrides,
)

pytest.importorskip("verl", reason="verl is not installed: pip install verl==0.9.1 (pins in docs/rl.md)")
REPO = CONF_DIR.parent


def test_prepared_rows_have_verls_fields(rl_data):
    import pandas as pd

    frame = pd.read_parquet(rl_data["files"]["train"])
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"} <= set(frame.columns)
    row = frame.iloc[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["reward_model"]["ground_truth"]["label"] in ("correct", "wrong", "disputed", "unverifiable")
    tools = row["extra_info"]["tools_kwargs"][TOOL_NAME]["create_kwargs"]
    assert tools["corpus"] == rl_data["corpus"]
    assert sum(rl_data["rows"].values()) == 462  # every bundled claim has a gold label


def test_multi_hop_only_keeps_multi_hop_claims(tmp_path):
    from rl_support import bundled_cases

    from factlab.train.rl.data import prepare

    manifest = prepare(bundled_cases(), "bundled", tmp_path, {"train": 0.8, "val": 0.1, "test": 0.1},
                       multi_hop_only=True)
    assert sum(manifest["rows"].values()) == 24


def test_rows_load_through_verls_rlhf_dataset(rl_data, tiny_qwen):
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = compose_verl_config(verl_overrides(rl_data, tiny_qwen, TOOL_CONFIG, 1, 2, "ckpt")).data
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen)
    dataset = RLHFDataset(data_files=rl_data["files"]["test"], tokenizer=tokenizer, config=config)
    assert len(dataset) == rl_data["rows"]["test"]  # no prompt filtered as overlong
    item = dataset[0]
    assert item["raw_prompt"][1]["role"] == "user" and item["tools_kwargs"][TOOL_NAME]["create_kwargs"]["corpus"]
    assert item["reward_model"]["ground_truth"]["label"]


def test_composed_config_passes_verls_validation(rl_data, tiny_qwen, capsys):
    config = compose_verl_config(verl_overrides(rl_data, tiny_qwen, TOOL_CONFIG, 1, 3, "ckpt"))
    validate_verl_config(config)
    assert "All configuration checks passed" in capsys.readouterr().out
    rollout = config.actor_rollout_ref.rollout
    assert rollout.multi_turn.enable and rollout.agent.default_agent_loop == "tool_agent"
    assert config.algorithm.adv_estimator == "grpo" and "mlflow" in config.trainer.logger
    assert config.reward.custom_reward_function.path == "pkg://factlab.train.rl.reward"
    assert config.data.train_files == rl_data["files"]["train"]


def test_validation_catches_a_bad_batch(rl_data, tiny_qwen):
    config = compose_verl_config(verl_overrides(rl_data, tiny_qwen, TOOL_CONFIG, 1, 3, "ckpt",
                                                ["actor_rollout_ref.actor.ppo_mini_batch_size=16"]))
    with pytest.raises((AssertionError, ValueError)):
        validate_verl_config(config)


def test_tool_config_declares_the_shared_schema():
    tool = OmegaConf.to_container(OmegaConf.load(TOOL_CONFIG), resolve=True)["tools"][0]
    assert tool["class_name"] == "factlab.train.rl.tool.SearchTool"
    assert tool["tool_schema"] == SEARCH_TOOL_SCHEMA


def test_recipes_compose_with_train_yaml():
    for name in ("search_r1", "grpo_search_cpu"):
        cfg = compose_config("train", [f"recipe={name}", "tracking=off"])
        assert cfg.recipe.stage.name == "judge" and cfg.recipe.base_lm.name == "local_qwen05"


def test_no_gpu_is_refused_with_what_to_do(monkeypatch):
    monkeypatch.setattr("factlab.train.rl.search_r1.cuda_devices", lambda: 0)
    with pytest.raises(NoGPUError, match="grpo_search_cpu"):
        require_gpus(1)


@pytest.mark.slow
def test_train_py_exits_non_zero_before_launching_without_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the recipe would launch VERL")
    result = subprocess.run([sys.executable, "train.py", "recipe=search_r1", "tracking=off",
                             f"output_root={tmp_path}", f"hydra.run.dir={tmp_path}/hydra"],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "needs 1 CUDA GPU(s)" in result.stderr + result.stdout
    assert not (tmp_path / "search_r1").exists() or not any((tmp_path / "search_r1").rglob("*.parquet"))


def test_verl_config_composes_inside_a_running_hydra_app(rl_data, tiny_qwen):
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):  # as inside train.py's @hydra.main
        config = compose_verl_config(verl_overrides(rl_data, tiny_qwen, TOOL_CONFIG, 1, 3, "ckpt"))
        assert GlobalHydra.instance().is_initialized()  # the app's Hydra state came back
    assert config.algorithm.adv_estimator == "grpo"


@pytest.mark.slow
def test_train_py_dry_run_prepares_serves_and_validates(tmp_path, tiny_qwen):
    result = subprocess.run([sys.executable, "train.py", "recipe=search_r1", "recipe.dry_run=true", "tracking=off",
                             f"recipe.base_model={tiny_qwen}", f"output_root={tmp_path}", "~recipe.retrieval.encoder",
                             "+recipe.retrieval.encoder._target_=factlab.retrieval.encoders.HashingEncoder",
                             f"hydra.run.dir={tmp_path}/hydra"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "All configuration checks passed" in result.stdout and "verl.trainer.main_ppo" in result.stdout
    assert list(tmp_path.rglob("train.parquet")) and list(tmp_path.rglob("search_tool.yaml"))
