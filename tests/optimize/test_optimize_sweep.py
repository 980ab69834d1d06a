"""`python optimize.py -m ...` gives one MLflow run per job, all tagged with one sweep id (fake student)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
from optimize_fakes import KEYWORD

REPO = Path(__file__).resolve().parents[2]


def test_multirun_logs_one_tagged_run_per_optimizer(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
           "FACTLAB_MLFLOW_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "FACTLAB_MLFLOW_ARTIFACTS": str(tmp_path / "artifacts")}
    command = [
        sys.executable, "optimize.py", "-m", "stage=checkworthy", "optimizer=none,labeled_fewshot",
        "student._target_=optimize_fakes.rule_student", "+student._recursive_=false", f"+student.keyword={KEYWORD}",
        "+student.dataset=${dataset}", "dataset.max_rows=4", "max_examples.train=10", "max_examples.val=4",
        "max_examples.test=4", "metric.retrieve.enabled=false", f"runs_dir={tmp_path / 'runs'}",
        f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    client = mlflow.MlflowClient(tracking_uri=env["FACTLAB_MLFLOW_URI"])
    experiment = client.get_experiment_by_name("optimize/checkworthy")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.tags["optimizer"] for r in runs) == ["labeled_fewshot", "none"]
    assert len({r.data.tags["sweep_id"] for r in runs}) == 1 and runs[0].data.tags["sweep_id"] == "multirun"
    assert all("hydra/config.yaml" in {a.path for a in client.list_artifacts(r.info.run_id, "hydra")} for r in runs)
    # each run logs its score intervals, and the sweep table reads the runs back with their predictions
    for run in runs:
        metrics = run.data.metrics
        assert metrics["test/score_after_ci_low"] <= metrics["test/score_after"] <= metrics["test/score_after_ci_high"]
        assert metrics["test/delta_ci_low"] <= metrics["test/delta"] <= metrics["test/delta_ci_high"]
    from factlab.optimize.sweep import main as sweep_table

    summary = sweep_table(["multirun", "--tracking-uri", env["FACTLAB_MLFLOW_URI"], "--out", str(tmp_path / "t"),
                                "--log"])
    assert summary["runs"] == summary["finished"] == 2
    table = (tmp_path / "t" / "sweep.md").read_text()
    assert "val 4, test 4 examples" in table and "| none |" in table and "| labeled_fewshot |" in table
    assert "| none vs labeled_fewshot | 4 |" in table  # head to head, paired over the same 4 test examples
    assert (tmp_path / "t" / "sweep.png").stat().st_size > 0
    last = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time DESC"])[0]
    assert {a.path for a in client.list_artifacts(last.info.run_id, "sweep")} == {"sweep/sweep.md", "sweep/sweep.png"}
