"""Interrupting a run and rerunning the same command resumes it: GEPA from its checkpoint, LM calls from the disk
cache, the same MLflow run; a different config never picks up another's state."""

from __future__ import annotations

import mlflow
import pytest
from optimize_fakes import ENGINE_CALLS, INTERRUPT, fake_config

from factlab.optimize.job import run
from factlab.optimize.runs import RunDirError

BUDGET = ["optimizer=gepa", "budget.max_metric_calls=60"]


def test_interrupted_gepa_run_resumes_to_the_same_budget_without_repeating_lm_calls(tmp_path):
    reference = run(fake_config(tmp_path / "reference", BUDGET))
    reference_calls = len(ENGINE_CALLS)
    ENGINE_CALLS.clear()

    cfg = fake_config(tmp_path / "interrupted", BUDGET)
    INTERRUPT["after"] = 35  # mid-compile: the baseline takes 20 real calls
    with pytest.raises(KeyboardInterrupt):
        run(cfg)
    calls_before_interrupt = len(ENGINE_CALLS)
    assert calls_before_interrupt == 35
    INTERRUPT["after"] = None
    resumed = run(cfg)

    assert resumed["resumed"] and resumed["run_dir"] != reference["run_dir"]
    assert resumed["optimizer/metric_calls"] == reference["optimizer/metric_calls"]
    assert len(ENGINE_CALLS) == len(set(ENGINE_CALLS)), "an LM call was made twice"
    assert len(ENGINE_CALLS) == reference_calls
    assert resumed["instructions_after"] == reference["instructions_after"]
    assert resumed["val/score_after"] == reference["val/score_after"]


def test_rerunning_a_finished_run_costs_no_lm_call_and_continues_its_mlflow_run(tmp_path):
    first = run(fake_config(tmp_path, BUDGET, tracking=True))
    ENGINE_CALLS.clear()
    again = run(fake_config(tmp_path, BUDGET, tracking=True))
    assert ENGINE_CALLS == []
    assert again["resumed"] and again["mlflow_run_id"] == first["mlflow_run_id"]
    assert again["optimizer/metric_calls"] == first["optimizer/metric_calls"]


def test_tracking_changes_keep_the_run_dir_and_other_configs_get_their_own(tmp_path):
    base = run(fake_config(tmp_path, BUDGET))
    tracked = run(fake_config(tmp_path, BUDGET, tracking=True))
    other = run(fake_config(tmp_path, ["optimizer=gepa", "budget.max_metric_calls=61"]))
    assert tracked["run_dir"] == base["run_dir"] and tracked["resumed"]
    assert other["run_dir"] != base["run_dir"] and not other["resumed"]


def test_resume_false_refuses_an_existing_run_dir(tmp_path):
    run(fake_config(tmp_path, ["optimizer=none"]))
    with pytest.raises(RunDirError, match="resume=false"):
        run(fake_config(tmp_path, ["optimizer=none", "resume=false"]))


def test_an_explicit_gepa_log_dir_of_another_config_is_refused(tmp_path):
    log_dir = tmp_path / "shared-gepa-dir"
    run(fake_config(tmp_path, [*BUDGET, f"optimizer.log_dir={log_dir}"]))
    assert (log_dir / "gepa_state.bin").exists()
    with pytest.raises(RunDirError, match="belongs to another config"):
        run(fake_config(tmp_path, ["optimizer=gepa", "budget.max_metric_calls=61", f"optimizer.log_dir={log_dir}"]))


def test_a_recorded_mlflow_run_that_is_gone_starts_a_new_one(tmp_path):
    first = run(fake_config(tmp_path, ["optimizer=none"], tracking=True))
    store = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    mlflow.MlflowClient(tracking_uri=store).delete_run(first["mlflow_run_id"])
    again = run(fake_config(tmp_path, ["optimizer=none"], tracking=True))
    assert again["resumed"] and again["mlflow_run_id"] != first["mlflow_run_id"]


def test_changed_examples_or_stage_code_get_a_new_run_dir(tmp_path, monkeypatch):
    """A code change that alters what the optimizer sees (the examples) or how it scores (the stage's module) must
    not resume the run made before it, though the config and the dataset are the same."""
    import factlab.optimize.examples as examples
    import factlab.optimize.runs as runs

    base = run(fake_config(tmp_path, ["optimizer=none"]))
    original = examples.stage_splits

    def edited(*args, **kwargs):
        splits = original(*args, **kwargs)
        first = splits["train"][0]
        splits["train"][0] = first.copy(**{key: f"{first[key]} " for key in first.inputs().keys()})
        return splits

    monkeypatch.setattr(examples, "stage_splits", edited)
    changed_examples = run(fake_config(tmp_path, ["optimizer=none"]))
    monkeypatch.setattr(examples, "stage_splits", original)
    monkeypatch.setattr(runs, "source_hash", lambda module: "edited")
    changed_code = run(fake_config(tmp_path, ["optimizer=none"]))
    dirs = {base["run_dir"], changed_examples["run_dir"], changed_code["run_dir"]}
    assert len(dirs) == 3 and not changed_examples["resumed"] and not changed_code["resumed"]
