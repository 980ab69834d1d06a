"""The CPU GRPO path: TRL's GRPOTrainer with the search environment and factlab's reward, on a tiny local Qwen2."""

from __future__ import annotations

import json

import pytest
from transformers.utils import get_json_schema

from factlab.train.rl.environment import SearchEnvironment
from factlab.train.rl.format import SEARCH_TOOL_SCHEMA
from factlab.train.rl.grpo_trainer import grpo_config, load_rows, train_grpo
from factlab.train.rl.plots import curves_figure
from factlab.train.rl.rollouts import RolloutLog
from factlab.train.rl.trl_rewards import component_reward, render_completion, verl_reward


def test_trl_sees_the_same_tool_schema_as_verl():
    schema = get_json_schema(SearchEnvironment("http://127.0.0.1:1/retrieve", 3).search)
    assert schema["function"].pop("return") == {"type": "string"}  # transformers adds it; the chat template skips it
    assert schema == SEARCH_TOOL_SCHEMA


def test_environment_searches_the_rows_corpus(service, rl_data):
    env = SearchEnvironment(service.url, topk=2)
    row = load_rows(rl_data["files"]["train"], limit=1)[0]
    env.reset(**row)
    assert env.corpus == rl_data["corpus"]
    text = env.search("Fleming penicillin 1928 St Mary's Hospital")
    assert text.startswith("[ena-penicillin") and len(text.splitlines()) <= 2


def test_verl_reward_scores_trl_conversations_like_verl_text():
    reward = verl_reward(format_weight=0.1, recall_weight=0.0)
    gt = {"ground_truth": {"relation": "contradict", "label": "wrong", "chunk_ids": []}}
    good = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
        "name": "search", "arguments": {"query": "x"}}}]}, {"role": "tool", "content": "[a#p1-c1] (tier 1) y"},
        {"role": "assistant", "content": '<answer>{"relation": "contradict"}</answer>'}]
    bad = [{"role": "assistant", "content": '<answer>{"relation": "support"}</answer>'}]
    scores = reward([[]] * 2, [good, bad], ["factlab/bundled"] * 2, [gt, gt], [{}, {}])
    assert scores == [1.0, pytest.approx(0.05)]
    answered = component_reward("answered", "answered", 0.1, 0.1)
    silent = [good[0], good[1], {"role": "assistant", "content": "The evidence says y."}]
    assert answered([[]] * 3, [good, bad, silent], ["factlab/bundled"] * 3, [gt] * 3, [{}] * 3) == [1.0, 1.0, 0.0]
    assert "<tool_response>" in render_completion(good)
    log = RolloutLog()
    logged = component_reward("verdict", "acc", 0.1, 0.1, log=log)
    logged([[]] * 2, [good, silent], ["factlab/bundled"] * 2, [gt] * 2, [{"case_id": "c"}] * 2)
    kept, unanswered = log.records["train"]
    assert "tail" not in kept and unanswered["tail"].endswith("The evidence says y.")  # what it wrote instead


@pytest.mark.slow
def test_two_grpo_steps_move_the_lora_weights(tiny_qwen, rl_data, service, tmp_path):
    train = load_rows(rl_data["files"]["train"], limit=4)
    lengths = []

    def varying(completions, **kwargs):  # the tiny random model never answers: give GRPO a spread to learn from
        texts = [render_completion(c) for c in completions]
        lengths.extend(len(t) for t in texts)
        return [(len(t) % 7) / 7 for t in texts]

    config = grpo_config(tmp_path / "trl", max_steps=2, batch_size=1, num_generations=4, max_completion_length=24,
                         max_tool_calls=1, learning_rate=5e-2, temperature=1.0, beta=0.0, bf16=False, seed=0,
                         shuffle=False, reward_weights=[1.0, 1.0, 0.0])
    peft = {"enabled": True, "r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    trainer, _, _ = train_grpo(tiny_qwen, train, None, service.url, 2, config, peft,
                               [verl_reward(0.1, 0.1), varying, component_reward("searched", "searched", 0.1, 0.1)])
    rewards = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    assert all("rewards/searched/mean" in entry for entry in trainer.state.log_history if "reward" in entry)
    assert len(rewards) == 2 and len(set(lengths)) > 1
    lora_b = {name: p for name, p in trainer.model.named_parameters() if "lora_B" in name}
    assert lora_b and any(float(p.abs().sum()) > 0 for p in lora_b.values()), "LoRA B started at zero and never moved"
    assert json.dumps(trainer.state.log_history)  # every logged value is plain JSON (what the tracker forwards)


@pytest.mark.slow
def test_an_interrupted_grpo_run_resumes_from_its_checkpoint(tiny_qwen, rl_data, service, tmp_path):
    """Two steps with a checkpoint after each, then the same run asked for three: it resumes at step 2 with the
    saved adapter and step log (the curve spans all three steps), and the kept "before" evaluation is not redone;
    asked for the two it has, it loads checkpoint-2 and trains nothing."""
    import torch

    from factlab.train.trainer_support import resumable_checkpoint

    train = load_rows(rl_data["files"]["train"], limit=4)
    test = load_rows(rl_data["files"]["test"], limit=1)
    peft = {"enabled": True, "r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    rewards = [verl_reward(0.1, 0.1), lambda completions, **kw: [(len(str(c)) % 5) / 5 for c in completions]]

    def config(steps):
        return grpo_config(tmp_path / "trl", max_steps=steps, batch_size=1, num_generations=2,
                           max_completion_length=12, max_tool_calls=1, learning_rate=5e-2, temperature=1.0,
                           beta=0.0, bf16=False, seed=0, shuffle=False, reward_weights=[1.0, 1.0], save_every=1)

    first, _, _ = train_grpo(tiny_qwen, train, None, service.url, 2, config(2), peft, rewards)
    checkpoint = resumable_checkpoint(tmp_path / "trl", resume=True)
    assert checkpoint and checkpoint.endswith("checkpoint-2")
    saved = {n: p.detach().clone() for n, p in first.model.named_parameters() if "lora_B" in n}
    done, _, _ = train_grpo(tiny_qwen, train, None, service.url, 2, config(2), peft, rewards, resume_from=checkpoint)
    assert done.state.global_step == 2, "a run already at max_steps trains no further step on resume"
    assert all(torch.equal(p.detach(), saved[n]) for n, p in done.model.named_parameters() if n in saved)
    before = tmp_path / "before.json"
    before.write_text(json.dumps({"eval_reward": 0.125}))

    resumed, after, kept = train_grpo(tiny_qwen, train, test, service.url, 2, config(3), peft, rewards,
                                      eval_before=True, resume_from=checkpoint, before_file=before)
    assert resumed.state.global_step == 3 and kept == {"eval_reward": 0.125} and "eval_reward" in after
    logged = [(e["step"], e["reward"]) for e in resumed.state.log_history if "reward" in e and "loss" in e]
    assert [step for step, _ in logged] == [1, 2, 3]
    assert logged[:2] == [(e["step"], e["reward"]) for e in first.state.log_history if "reward" in e and "loss" in e]
    moved = {n: p.detach() for n, p in resumed.model.named_parameters() if "lora_B" in n}
    assert set(moved) == set(saved) and any(float(p.abs().sum()) > 0 for p in moved.values())
    figure = curves_figure({"reward": [0.1, None, 0.3]}, 2, "t", before={"reward": 0.125}, after={"reward": 0.2})
    assert len(figure.axes) == 1 and len(figure.axes[0].lines) == 4


@pytest.mark.slow
def test_train_py_runs_the_curriculum_warm_start_and_before_after(tmp_path, tiny_qwen):
    """The whole CPU recipe on a tiny model: warm start, curriculum order, GRPO, evaluation before and after, the
    accuracy and search-rate metrics in a real MLflow store."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import mlflow

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "FACTLAB_MLFLOW_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "FACTLAB_MLFLOW_ARTIFACTS": str(tmp_path / "artifacts")}
    result = subprocess.run(
        [sys.executable, "train.py", "recipe=grpo_search_cpu", f"recipe.base_model={tiny_qwen}",
         f"output_root={tmp_path}", "~recipe.retrieval.encoder",
         "+recipe.retrieval.encoder._target_=factlab.retrieval.encoders.HashingEncoder", "recipe.max_steps=1",
         "recipe.num_generations=2", "recipe.max_completion_length=16", "recipe.max_tool_calls=1",
         "recipe.max_rows.train=6", "recipe.max_rows.test=2", "recipe.eval_generations=1",
         "recipe.curriculum.order=one_search_first",
         "recipe.eval_before=true", "recipe.warm_start.steps=1", "recipe.warm_start.max_length=4096",
         f"hydra.run.dir={tmp_path}/hydra"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "curriculum one_search_first" in (tmp_path / "hydra" / "train.log").read_text()
    assert "grpo_search_cpu: test/reward=" in result.stdout + result.stderr  # the recipe's name, not a metric's
    assert list(tmp_path.rglob("warm_start/merged/COMPLETE"))
    client = mlflow.MlflowClient(tracking_uri=env["FACTLAB_MLFLOW_URI"])
    run = client.search_runs([client.get_experiment_by_name("train/grpo_search_cpu").experiment_id])[0]
    metrics, params = run.data.metrics, run.data.params
    for name in ("test/reward", "test/verdict", "test/searched", "test_before/reward", "test_before/searched",
                 "test/answered", "test_before/answered", "test/answered_low",
                 "test/verdict_low", "test/verdict_high", "test_gain/verdict", "test_gain/reward"):
        assert name in metrics, sorted(metrics)
    held_out = json.loads(next(tmp_path.rglob("held_out.json")).read_text())
    low, high = held_out["after"]["verdict"]["interval"]
    assert low <= held_out["after"]["verdict"]["mean"] <= high
    assert metrics["test/verdict"] == pytest.approx(held_out["after"]["verdict"]["mean"], abs=1e-6)
    assert metrics["test_gain/verdict"] == pytest.approx(held_out["gain"]["verdict"]["mean"], abs=1e-6)
    assert held_out["before"]["rows"] == held_out["after"]["rows"] == held_out["gain"]["rows"] == 2
    assert held_out["after"]["rollouts"] == held_out["before"]["rollouts"] == 2  # two test rows x eval_generations 1
    rollouts = [json.loads(line) for line in next(tmp_path.rglob("rollouts_after.jsonl")).read_text().splitlines()]
    assert len(rollouts) == 2 and {"case_id", "score", "acc", "searched"} <= set(rollouts[0])
    assert params["rl/curriculum"] == "one_search_first" and params["rl/warm_start_steps"] == "1"
    assert "warm_start/loss" in metrics
