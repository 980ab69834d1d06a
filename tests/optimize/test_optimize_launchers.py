"""A sweep through Hydra's launcher plugins (the local Ray launcher, submitit's local executor): one MLflow run per
job under one sweep id, and a second launch of the same sweep resumes those runs instead of starting new ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from optimize_fakes import KEYWORD

REPO = Path(__file__).resolve().parents[2]


def launch(tmp_path: Path, launcher: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(REPO),
                                                        os.environ.get("PYTHONPATH", "")]),
           "FACTLAB_MLFLOW_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "FACTLAB_MLFLOW_ARTIFACTS": str(tmp_path / "artifacts"), "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    launcher_args = {"ray_local": ["hydra.launcher.ray.init.num_cpus=2"],
                     "submitit_local": ["hydra.launcher.timeout_min=10"]}[launcher]
    command = [
        sys.executable, "optimize.py", "-m", "stage=checkworthy", "optimizer=none,labeled_fewshot",
        f"hydra/launcher={launcher}", *launcher_args,
        "student._target_=optimize_fakes.rule_student", "+student._recursive_=false", f"+student.keyword={KEYWORD}",
        "+student.dataset=${dataset}", "dataset.max_rows=4", "max_examples.train=10", "max_examples.val=4",
        "max_examples.test=4", "metric.retrieve.enabled=false", f"runs_dir={tmp_path / 'runs'}",
        f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["ray_local", "submitit_local"])
def test_sweep_through_a_launcher_plugin_is_tracked_and_resumes(tmp_path, launcher):
    first = launch(tmp_path, launcher)
    assert first.returncode == 0, first.stderr[-3000:]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("optimize/checkworthy")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.tags["optimizer"] for r in runs) == ["labeled_fewshot", "none"]
    assert {r.data.tags["sweep_id"] for r in runs} == {"multirun"}
    assert all(r.info.status == "FINISHED" for r in runs)
    recorded = {run_id for p in (tmp_path / "runs").rglob("mlflow_runs.json")
                for run_id in json.loads(p.read_text()).values()}
    assert recorded == {r.info.run_id for r in runs}

    second = launch(tmp_path, launcher)  # the same sweep again: the same run dirs, the same MLflow runs
    assert second.returncode == 0, second.stderr[-3000:]
    again = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_id for r in again) == sorted(r.info.run_id for r in runs)
    assert {r.data.tags["sweep_id"] for r in again} == {"multirun"}
