"""loop.py's real jobs end to end on the local 0.5B student (llama.cpp), the MiniLM retriever and a real MLflow store:
one round on two bundled test cases: evaluate, pick the stage first-failure blames most, compile it (labeled few-shot
on a few train examples: no LM call while compiling), evaluate again with the compiled program. Marked `llm`; a few
minutes on CPU. Asserts the wiring (steps, programs handed on, runs, table), never scores."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
from omegaconf import OmegaConf

from factlab.config import compose_config
from factlab.loop.job import run

pytestmark = pytest.mark.llm

CASES = "[bundled-en-a-0036,bundled-en-a-0040]"  # 2 claims (one outdated) + an opinion; the 0.5B gets some wrong


def test_one_round_of_the_loop_on_the_local_student(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the optimize run dir and DSPy's cache land here, not in the checkout
    cfg = compose_config("loop", [
        "name=smoke", "rounds=1", "data=bundled", "blame.method=first_failure", f"out_dir={tmp_path / 'loops'}",
        "tracking=mlflow", f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"tracking.artifact_root={tmp_path / 'artifacts'}", "progress=false", "bootstrap.samples=100",
        "evaluate.sample_cases=null",
        # every compiled program is plugged in, so the second evaluation runs the real job with it (a 4-call compile
        # on 2 val examples rarely beats the program as written; adoption is tested in tests/loop/test_loop.py)
        "optimize.adopt_min_val_gain=null"])
    # first-failure blame picks the stage, so the evaluations skip the counterfactual reruns (tests/evals covers
    # them): 547 s -> 350 s here
    cfg.evaluate.overrides = [f"case_ids={CASES}", "k=2", "stage.judge.program.max_snippets=2",
                              "bootstrap.samples=100", f"lm_cache_dir={tmp_path / 'dspy'}",
                              "attribution.counterfactual.stages=[]"]
    cfg.optimize.overrides = ["max_examples.train=4", "max_examples.val=2", "max_examples.test=2",
                              "budget.max_metric_calls=4", f"cache_dir={tmp_path / 'dspy'}",
                              f"runs_dir={tmp_path / 'runs'}", "autolog.enabled=false"]
    cfg.optimize.by_stage = OmegaConf.create({"default": ["optimizer=labeled_fewshot"]})

    result = run(cfg)

    steps = result["steps"]
    assert [s["kind"] for s in steps] == ["evaluate", "optimize", "evaluate"], result.get("stopped")
    stage, program = steps[1]["stage"], Path(steps[1]["program_path"])
    assert stage in cfg.blame.stages and program.exists() and json.loads(program.read_text())
    assert steps[1]["blame_counts"][stage] == max(steps[1]["blame_counts"].values()) > 0
    assert steps[2]["programs"] == {stage: str(program)}
    assert f"programs.{stage}={program}" in steps[2]["overrides"]
    rows = result["rows"]
    assert rows[0]["claims"] == rows[1]["claims"] == 2 and rows[1]["optimized"] == f"{stage} (labeled_fewshot)"
    assert "gain_vs_previous" in rows[1] and "| 1 |" in result["table"]

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    evaluations = [client.get_run(s["run_id"]) for s in steps if s["kind"] == "evaluate"]
    assert [r.data.tags["compiled"] for r in evaluations] == ["none", stage]
    assert client.get_run(steps[1]["run_id"]).data.tags["sweep_id"] == "loop-smoke"
    loop_run = client.get_run(result["mlflow_run_id"])
    assert loop_run.data.tags["optimized"] == stage
    assert {a.path for a in client.list_artifacts(loop_run.info.run_id, "loop")} >= {"loop/rounds.md",
                                                                                      "loop/rounds.png"}
