"""optimize.py end to end on the real local 0.5B student (llama.cpp) and a real MLflow store: bootstrap few-shot on
a small slice of the bundled checkworthy data. Marked `llm` (CI runs `pytest -m llm`); a few minutes on CPU.

Asserts structure (the run, its metrics and artifacts), never scores: a 0.5B model may or may not improve.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[2]


def test_bootstrap_on_the_local_student_logs_the_run_and_its_artifacts(tmp_path):
    env = {**os.environ, "FACTLAB_MLFLOW_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "FACTLAB_MLFLOW_ARTIFACTS": str(tmp_path / "artifacts")}
    command = [sys.executable, "optimize.py", "experiment=ci_smoke", "stage=checkworthy", "optimizer=bootstrap",
               f"runs_dir={tmp_path / 'runs'}", f"hydra.run.dir={tmp_path / 'outputs'}"]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]

    client = mlflow.MlflowClient(tracking_uri=env["FACTLAB_MLFLOW_URI"])
    experiment = client.get_experiment_by_name("optimize/checkworthy")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.tags["optimizer"] == "bootstrap" and run.data.tags["student"] == "local_qwen05"
    for key in ("val/score_before", "val/score_after", "test/score_before", "test/score_after",
                "optimizer/metric_calls", "lm/student/calls", "time/wall_s"):
        assert key in run.data.metrics, key
    assert 0.0 <= run.data.metrics["test/score_after"] <= 1.0
    assert run.data.metrics["lm/student/calls"] > 0

    def walk(path=None):
        for item in client.list_artifacts(run.info.run_id, path):
            yield from (walk(item.path) if item.is_dir else [item.path])

    artifacts = set(walk())
    assert {"program/checkworthy.json", "program/readable.txt", "predictions/val_baseline.jsonl",
            "predictions/test_compiled.jsonl", "candidates/bootstrap.jsonl", "plots/score_over_budget.png",
            "hydra/config.yaml"} <= artifacts
