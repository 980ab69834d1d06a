"""GEPA, MIPROv2 and bootstrap few-shot compile the checkworthy stage end to end on deterministic fake LMs:
the student is right only when its instruction names the rulebook (or it sees demos); the DummyLM reflector
proposes an instruction naming it. Each run takes seconds."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import mlflow
from dspy.utils.dummies import DummyLM
from optimize_fakes import KEYWORD, fake_config

from factlab.config import compose_config
from factlab.models.errors import call_safely
from factlab.optimize.job import run
from factlab.optimize.scoring import RolloutCounter
from factlab.programs.checkworthy import CheckWorthiness
from factlab.stages.build import build_program


def _assert_improved(out: dict) -> None:
    assert out["val/score_after"] > out["val/score_before"]
    assert out["test/score_after"] > out["test/score_before"]
    assert Path(out["program_path"]).is_file()


def test_gepa_rewrites_the_instruction_and_the_score_rises(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=gepa", "budget.max_metric_calls=50"]))
    assert KEYWORD not in out["instructions_before"]["classify"]
    assert KEYWORD in out["instructions_after"]["classify"]
    _assert_improved(out)
    assert 50 <= out["optimizer/metric_calls"] <= 50 + 10 + 3  # the budget, overshot by at most one iteration
    assert out["gepa/proposals_accepted"] >= 1 and out["gepa/proposals_rejected"] == 0


def test_miprov2_rewrites_the_instruction_and_the_score_rises(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=miprov2", "budget.max_metric_calls=60",
                                     "optimizer.max_bootstrapped_demos=0", "optimizer.max_labeled_demos=0"]))
    assert KEYWORD in out["instructions_after"]["classify"]
    _assert_improved(out)
    # MIPROv2's budget is an estimate: bootstrapping the proposer's demos scores train runs until enough succeed
    # (all of train for this rarely-right student), and its trial schedule rounds up to a full val evaluation
    assert 0 < out["optimizer/metric_calls"] <= 60 + out["examples"]["train"] + out["examples"]["val"]


def test_bootstrap_adds_demos_and_the_score_rises(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=bootstrap", "budget.max_metric_calls=40"]))
    program = build_program(compose_config("optimize", ["stage=checkworthy"]).stage, compiled=out["program_path"])
    assert len(program.classify.demos) >= 1
    _assert_improved(out)
    assert 0 < out["optimizer/metric_calls"] <= 40


def test_labeled_fewshot_and_none_run_without_metric_calls(tmp_path):
    for name in ("labeled_fewshot", "none"):
        out = run(fake_config(tmp_path / name, [f"optimizer={name}"]))
        assert out["optimizer/metric_calls"] == 0
    assert out["val/score_after"] == out["val/score_before"]


def test_mlflow_run_holds_scores_program_tables_and_plot(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=gepa", "budget.max_metric_calls=40", "sweep_id=s-1"],
                          tracking=True))
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    run_ = client.get_run(out["mlflow_run_id"])
    metrics, tags, params = run_.data.metrics, run_.data.tags, run_.data.params
    for key in ("val/score_before", "val/score_after", "test/score_before", "test/score_after",
                "optimizer/metric_calls", "lm/student/calls", "lm/student/real_calls", "lm/student/prompt_tokens",
                "lm/reflector/calls",
                "time/wall_s", "gepa/candidates"):
        assert key in metrics, key
    assert metrics["lm/student/real_calls"] <= metrics["lm/student/calls"]
    assert tags["sweep_id"] == "s-1" and tags["stage"] == "checkworthy" and tags["optimizer"] == "gepa"
    assert params["optimizer.max_metric_calls"] == "40" and params["stage.name"] == "checkworthy"

    def walk(path=None):
        for item in client.list_artifacts(out["mlflow_run_id"], path):
            yield from (walk(item.path) if item.is_dir else [item.path])

    artifacts = set(walk())
    assert {"program/checkworthy.json", "program/readable.txt", "predictions/val_baseline.jsonl",
            "predictions/test_compiled.jsonl", "candidates/gepa.jsonl", "plots/score_over_budget.png"} <= artifacts
    local = client.download_artifacts(out["mlflow_run_id"], "candidates/gepa.jsonl", str(tmp_path / "dl"))
    rows = [json.loads(line) for line in Path(local).read_text().splitlines()]
    assert rows[0]["candidate"] == 0 and rows[0]["parents"] == []
    assert {"val_score", "pareto", "metric_calls_at_discovery", "instructions"} <= set(rows[0])
    assert any(KEYWORD in row["instructions"]["classify"] for row in rows if row["best"])


def test_failed_program_runs_count_against_the_budget():
    program = CheckWorthiness()
    counter = RolloutCounter(CheckWorthiness)
    with dspy.context(lm=DummyLM([{"reason": "no flag"}] * 4), adapter=dspy.ChatAdapter(), callbacks=[counter]):
        results = [call_safely("checkworthy", program.deepcopy(), text="x") for _ in range(2)]
    assert all(error is not None for _, error in results)  # unparseable: the metric never sees these runs
    assert counter.runs == 2


def test_mlflow_holds_each_split_once_though_bootstrap_compiles_inner_optimizers(tmp_path):
    out = run(fake_config(tmp_path, ["optimizer=bootstrap", "budget.max_metric_calls=40"], tracking=True))
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    for name, split in (("trainset.json", "train"), ("valset.json", "val")):
        local = client.download_artifacts(out["mlflow_run_id"], name, str(tmp_path / "dl"))
        table = json.loads(Path(local).read_text())
        assert len(table["data"]) == out["examples"][split], name
        assert len({json.dumps(row) for row in table["data"]}) == len(table["data"]), name
