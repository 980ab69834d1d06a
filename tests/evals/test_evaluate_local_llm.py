"""evaluate.py end to end on the real local 0.5B student (llama.cpp), the MiniLM retriever and a real MLflow store,
on two cases of the bundled test split (one with two claims, one opinion-only). Marked `llm` (CI runs
`pytest -m llm`); a few minutes on CPU.

Asserts structure (the run, its metrics, attribution and artifacts), never scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[2]
CASES = "[bundled-en-a-0036,bundled-en-a-0040]"  # 2 claims (one outdated, so likely a wrong label) + an opinion


def test_evaluate_on_the_local_student_logs_stage_metrics_and_attribution(tmp_path):
    env = {**os.environ, "FACTLAB_MLFLOW_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "FACTLAB_MLFLOW_ARTIFACTS": str(tmp_path / "artifacts")}
    command = [sys.executable, "evaluate.py", f"case_ids={CASES}", "k=2", "stage.judge.program.max_snippets=2",
               "bootstrap.samples=100", f"output_dir={tmp_path / 'out'}", "progress=false",
               # one document stage and one claim stage substituted on the real model (every stage is substituted
               # offline in tests/evals/test_attribution.py): with all eight this test took 469 s here, with two 82 s
               "attribution.counterfactual.stages=[vertical,judge]"]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]

    client = mlflow.MlflowClient(tracking_uri=env["FACTLAB_MLFLOW_URI"])
    experiment = client.get_experiment_by_name("evaluate/bundled")
    (run,) = client.search_runs([experiment.experiment_id])
    metrics = run.data.metrics
    assert run.info.status == "FINISHED" and run.data.tags["student"] == "local_qwen05"
    assert metrics["test/cases"] == 2 and metrics["test/items"] == 2
    for key in ("test/paragraphs/boundary_f1", "test/checkworthy/accuracy", "test/extract_claims/recall",
                "test/label/accuracy", "test/label/accuracy_ci_low", "test/e2e/false_alarm_rate",
                "attr/bad_items", "cost/pipeline/checkworthy/calls"):
        assert key in metrics, key
    assert metrics["cost/pipeline/checkworthy/calls"] > 0
    for method, outcomes in (("first_failure", 9), ("counterfactual", 10)):
        shares = [v for k, v in metrics.items() if k.startswith(f"attr/{method}/") and k.endswith("/share")]
        assert len(shares) == outcomes
        assert sum(shares) == pytest.approx(1.0 if metrics["attr/bad_items"] else 0.0)
    rows = [json.loads(line) for line in (tmp_path / "out" / "attribution.jsonl").read_text().splitlines()]
    assert len(rows) == metrics["attr/bad_items"]
    for row in rows:
        assert row["first_failure"] and row["first_failure_evidence"] and row["counterfactual"]
    paths = {a.path for a in client.list_artifacts(run.info.run_id, "eval")}
    assert {"eval/attribution.jsonl", "eval/items.jsonl", "eval/config.json"} <= paths
    assert {a.path for a in client.list_artifacts(run.info.run_id, "plots")} == {"plots/attribution.png"}
