"""The workbench loop (factlab/loop/job.py) with scripted jobs: which stage each round optimizes, what each step gets,
the paired gains of the rounds' table, resuming after an interruption, stopping when nothing is blamed, and the
loop's MLflow run; plus the real jobs' configs composing from the loop's overrides."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest

from factlab.config import compose_config
from factlab.loop.job import evaluate_overrides, optimize_overrides, run, train_overrides

CASES = [f"case-{i}" for i in range(10)]


def _value(overrides: list[str], key: str) -> str | None:
    return next((o.split("=", 1)[1] for o in overrides if o.startswith(key + "=")), None)


class ScriptedJobs:
    """evaluate: 10 cases x 3 claims; correct claims per case = number of compiled stages (0, 1, 2); blame moves from
    the judge to extract_claims once the judge is compiled. optimize: a program file per stage."""

    def __init__(self, tmp: Path, blame: dict[tuple[str, ...], dict[str, float]] | None = None,
                 fail_at: tuple[str, int] | None = None, val: dict[str, tuple[float, float]] | None = None) -> None:
        self.tmp, self.calls, self.fail_at, self.val = tmp, [], fail_at, val or {}
        self.blame = blame or {(): {"judge": 16, "extract_claims": 5, "none": 9},
                               ("judge",): {"extract_claims": 12, "judge": 3, "none": 5},
                               ("extract_claims", "judge"): {"extract_claims": 4, "judge": 2, "vertical": 4}}

    def evaluate(self, overrides: list[str], loop) -> dict:
        compiled = tuple(sorted([o.split("=", 1)[0].removeprefix("programs.") for o in overrides
                                 if o.startswith("programs.")]
                                + [o.split(".")[1] for o in overrides if o.startswith("stage.") and ".lora=" in o]))
        self.calls.append(("evaluate", compiled, overrides))
        if self.fail_at == ("evaluate", len(compiled)):
            raise KeyboardInterrupt("interrupted")
        out = Path(_value(overrides, "output_dir"))
        out.mkdir(parents=True, exist_ok=True)
        items = [{"case_id": case, "claim_id": f"{case}-c{j}", "gold_label": "correct",
                  "pred_label": "correct" if j < len(compiled) else "wrong"} for case in CASES for j in range(3)]
        (out / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
        blame = self.blame[compiled]
        wrong = 30 - 10 * len(compiled)
        metrics = {"test/items": 30.0, "test/cases": 10.0, "test/label/accuracy": 1 - wrong / 30,
                   "test/label/accuracy_ci_low": 0.0, "test/label/accuracy_ci_high": 1.0, "attr/bad_items": wrong,
                   **{f"attr/counterfactual/{s}/count": float(n) for s, n in blame.items()}}
        return {"run_id": f"eval{len(compiled)}", "output_dir": str(out), "metrics": metrics}

    def optimize(self, overrides: list[str], loop) -> dict:
        stage = _value(overrides, "stage")
        self.calls.append(("optimize", stage, overrides))
        path = self.tmp / f"{stage}.json"
        path.write_text("{}")
        return {"run_id": f"opt-{stage}", "program_path": str(path), "run_dir": str(self.tmp), "optimizer": "bootstrap",
                "examples": {"train": 3}, "metrics": {"test/score_before": 0.25, "test/score_after": 0.4,
                                                      "test/delta_ci_low": 0.1, "test/delta_ci_high": 0.2,
                                                      **self._val(stage)}}

    def train(self, overrides: list[str], loop) -> dict:
        recipe = _value(overrides, "recipe")
        self.calls.append(("train", recipe, overrides))
        adapter = self.tmp / f"{recipe}-adapter"
        adapter.mkdir(exist_ok=True)
        return {"run_id": f"train-{recipe}", "adapter": str(adapter), "recipe": recipe,
                "metrics": {"base/test/score": 0.6, "test/score": 0.7, "test/paired_gain_low": 0.05,
                            "test/paired_gain_high": 0.15}}

    def reflow(self, evaluation, loop, out_dir: Path) -> dict:
        self.calls.append(("reflow", evaluation["run_id"], []))
        return {"run_id": evaluation["run_id"], "counts": {"extract_claims": {"exported": self.reflowed}}, "files": {}}

    reflowed = 0

    def _val(self, stage: str) -> dict[str, float]:
        before, after = self.val.get(stage, (0.3, 0.45))
        return {"val/score_before": before, "val/score_after": after}


def _cfg(tmp: Path, *more: str):
    return compose_config("loop", [f"out_dir={tmp / 'loops'}", "tracking=mlflow",
                                   f"tracking.tracking_uri=sqlite:///{tmp / 'mlflow.db'}",
                                   f"tracking.artifact_root={tmp / 'artifacts'}", "progress=false", *more])


def test_each_round_optimizes_the_most_blamed_stage_and_the_table_pairs_the_rounds(tmp_path):
    jobs = ScriptedJobs(tmp_path)
    result = run(_cfg(tmp_path), evaluate=jobs.evaluate, optimize=jobs.optimize)

    kinds = [(c[0], c[1]) for c in jobs.calls]
    assert kinds == [("evaluate", ()), ("optimize", "judge"), ("evaluate", ("judge",)),
                     ("optimize", "extract_claims"), ("evaluate", ("extract_claims", "judge"))]
    last_eval = jobs.calls[-1][2]
    assert f"programs.judge={tmp_path / 'judge.json'}" in last_eval
    assert "sample_cases=40" in last_eval and "dataset=claims_bench" in last_eval
    assert "optimizer=bootstrap" in jobs.calls[1][2] and "optimizer=miprov2" in jobs.calls[3][2]
    assert "sweep_id=loop-claims_bench" in jobs.calls[1][2]

    rows = result["rows"]
    assert [r["compiled"] for r in rows] == ["none", "judge", "extract_claims, judge"]
    assert rows[1]["gain_vs_previous"] == pytest.approx(1 / 3)
    assert rows[2]["gain_vs_first"] == pytest.approx(2 / 3)
    low, high = rows[2]["gain_vs_first_ci"]
    assert low == pytest.approx(2 / 3) and high == pytest.approx(2 / 3)  # every case gains the same
    assert rows[1]["optimized"] == "judge (bootstrap)" and rows[0]["blame"]["judge"] == 16
    folder = Path(result["loop_dir"])
    assert (folder / "rounds.md").read_text().count("\n| ") >= 6 and (folder / "rounds.png").stat().st_size > 0
    assert "+0.333 [+0.333, +0.333]" in result["table"]

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    loop_run = client.get_run(result["mlflow_run_id"])
    assert loop_run.data.tags["optimized"] == "judge,extract_claims"
    assert [m.value for m in client.get_metric_history(loop_run.info.run_id, "label_accuracy")] == pytest.approx(
        [0.0, 1 / 3, 2 / 3])


def test_an_interrupted_loop_resumes_after_its_last_finished_step(tmp_path):
    cfg = _cfg(tmp_path)
    interrupted = ScriptedJobs(tmp_path, fail_at=("evaluate", 2))
    with pytest.raises(KeyboardInterrupt):
        run(cfg, evaluate=interrupted.evaluate, optimize=interrupted.optimize)
    assert len(interrupted.calls) == 5  # the last evaluation died

    again = ScriptedJobs(tmp_path)
    result = run(cfg, evaluate=again.evaluate, optimize=again.optimize)
    assert [(c[0], c[1]) for c in again.calls] == [("evaluate", ("extract_claims", "judge"))]
    assert len(result["rows"]) == 3

    done = ScriptedJobs(tmp_path)
    run(cfg, evaluate=done.evaluate, optimize=done.optimize)
    assert done.calls == []  # a finished loop only redraws its table


def test_a_changed_source_starts_a_new_loop_instead_of_resuming_one_scored_by_the_old_code(tmp_path, monkeypatch):
    import factlab.optimize.runs as runs

    cfg = _cfg(tmp_path)
    first = run(cfg, evaluate=ScriptedJobs(tmp_path).evaluate, optimize=ScriptedJobs(tmp_path).optimize)
    monkeypatch.setattr(runs, "source_hash", lambda name: "another version of " + name)
    again = ScriptedJobs(tmp_path)
    second = run(cfg, evaluate=again.evaluate, optimize=again.optimize)
    assert second["loop_dir"] != first["loop_dir"]
    assert [c[0] for c in again.calls] == ["evaluate", "optimize", "evaluate", "optimize", "evaluate"]
    state = json.loads((Path(second["loop_dir"]) / "state.json").read_text())
    assert state["fingerprint"]["inputs"]["source"] == "another version of factlab"


def test_a_program_without_a_val_gain_is_not_adopted_and_the_unchanged_round_is_not_evaluated_again(tmp_path):
    # The judge's optimizer returns the program as written (val 0.586 -> 0.586, as MIPROv2 did on extract_claims):
    # round 1 would run the same programs on the same cases, so its evaluation is round 0's, reused.
    jobs = ScriptedJobs(tmp_path, val={"judge": (0.586, 0.586)},
                        blame={(): {"judge": 16, "extract_claims": 5, "none": 9},
                               ("extract_claims",): {"judge": 3, "none": 5}})
    result = run(_cfg(tmp_path), evaluate=jobs.evaluate, optimize=jobs.optimize)

    assert [(c[0], c[1]) for c in jobs.calls] == [("evaluate", ()), ("optimize", "judge"),
                                                  ("optimize", "extract_claims"), ("evaluate", ("extract_claims",))]
    rows = result["rows"]
    assert [r["compiled"] for r in rows] == ["none", "none", "extract_claims"]
    assert rows[1]["reused_from"] == 0 and rows[1]["run_id"] == "eval0" and rows[1]["gain_vs_previous"] == 0.0
    assert rows[1]["optimized"] == "judge (bootstrap), not adopted"
    assert rows[2]["optimized"] == "extract_claims (bootstrap)"
    assert "(round 0's, reused)" in result["table"]

    always = ScriptedJobs(tmp_path / "always", val={"judge": (0.586, 0.586)})
    run(_cfg(tmp_path / "always", "optimize.adopt_min_val_gain=null"), evaluate=always.evaluate,
        optimize=always.optimize)
    assert [c[1] for c in always.calls if c[0] == "evaluate"] == [(), ("judge",), ("extract_claims", "judge")]


def test_the_loop_stops_when_no_allowed_stage_is_blamed_and_refuses_resume_false(tmp_path):
    jobs = ScriptedJobs(tmp_path, blame={(): {"retrieval": 20, "none": 10}})
    result = run(_cfg(tmp_path), evaluate=jobs.evaluate, optimize=jobs.optimize)
    assert [c[0] for c in jobs.calls] == ["evaluate"]
    assert "no stage" in result["stopped"] and "stopped early" in result["table"]
    with pytest.raises(FileExistsError, match="resume=false"):
        run(_cfg(tmp_path, "resume=false"), evaluate=jobs.evaluate, optimize=jobs.optimize)


def test_the_real_jobs_compose_from_the_loops_overrides(tmp_path):
    cfg = _cfg(tmp_path, "common=['lm@student=local_qwen15']")
    evaluate = compose_config("evaluate", evaluate_overrides(cfg, tmp_path, 1, {"judge": str(tmp_path / "j.json")}))
    assert evaluate.programs.judge == str(tmp_path / "j.json") and evaluate.sample_cases == 40
    assert evaluate.dataset.name == "claims_bench" and evaluate.student.name == "local_qwen15"
    assert evaluate.output_dir == str((tmp_path / "round1-evaluate").resolve())
    optimize = compose_config("optimize", optimize_overrides(cfg, "judge"))
    assert optimize.stage.name == "judge" and optimize.optimizer.name == "bootstrap"
    assert optimize.stage.program.max_snippets == 2 and optimize.budget.max_metric_calls == 300
    assert optimize.student.name == "local_qwen15" and optimize.sweep_id == "loop-claims_bench"
    assert compose_config("optimize", optimize_overrides(cfg, "vertical")).optimizer.name == "bootstrap"


def test_a_stage_whose_action_is_train_is_trained_on_its_reflowed_rows_and_evaluated_on_its_adapter(tmp_path):
    jobs = ScriptedJobs(tmp_path, blame={(): {"extract_claims": 16, "judge": 5, "none": 9},
                                         ("extract_claims",): {"judge": 12, "none": 5},
                                         ("extract_claims", "judge"): {"vertical": 4}})
    jobs.reflowed = 3
    result = run(_cfg(tmp_path, "action.extract_claims=train", "train.overrides=['recipe.max_train_seconds=60']"),
                 evaluate=jobs.evaluate, optimize=jobs.optimize, train=jobs.train, reflow=jobs.reflow)
    kinds = [(c[0], c[1]) for c in jobs.calls]
    assert kinds == [("evaluate", ()), ("reflow", "eval0"), ("train", "sft_extract_claims"),
                     ("evaluate", ("extract_claims",)), ("optimize", "judge"),
                     ("evaluate", ("extract_claims", "judge"))]
    train = jobs.calls[2][2]
    folder = Path(result["loop_dir"])
    assert f"+dataset.extra={(folder / 'reflow').resolve()}" in train and "dataset=claims_bench" in train
    assert "recipe.max_train_seconds=60" in train and "teacher=gold" in train
    assert f"stage.extract_claims.lora={tmp_path / 'sft_extract_claims-adapter'}" in jobs.calls[3][2]
    assert f"stage.extract_claims.lora={tmp_path / 'sft_extract_claims-adapter'}" in jobs.calls[5][2]
    rows = result["rows"]
    assert rows[1]["compiled"] == "extract_claims (adapter)"
    assert rows[1]["optimized"] == "extract_claims (trained: sft_extract_claims)"
    assert "0.600 -> 0.700, gain [+0.050, +0.150]" in result["table"]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    tags = client.get_run(result["mlflow_run_id"]).data.tags
    assert tags["trained"] == "extract_claims" and tags["optimized"] == "judge"

    again = ScriptedJobs(tmp_path)
    run(_cfg(tmp_path, "action.extract_claims=train", "train.overrides=['recipe.max_train_seconds=60']"),
        evaluate=again.evaluate, optimize=again.optimize, train=again.train, reflow=again.reflow)
    assert again.calls == []  # resumed: the train step is found, not run again


def test_no_reflowed_rows_train_on_the_dataset_alone_and_an_unknown_action_or_recipe_is_named(tmp_path):
    jobs = ScriptedJobs(tmp_path, blame={(): {"extract_claims": 16}, ("extract_claims",): {"none": 1}})
    run(_cfg(tmp_path, "action.extract_claims=train", "rounds=1"), evaluate=jobs.evaluate, optimize=jobs.optimize,
        train=jobs.train, reflow=jobs.reflow)
    assert not any(o.startswith("+dataset.extra=") for o in jobs.calls[2][2])
    with pytest.raises(ValueError, match="expected optimize or train"):
        run(_cfg(tmp_path, "action.judge=distil", "rounds=1", "name=other"),
            evaluate=ScriptedJobs(tmp_path, blame={(): {"judge": 3}}).evaluate)
    with pytest.raises(ValueError, match="train.by_stage has no recipe for judge"):
        train_overrides(_cfg(tmp_path), "judge", None)


def test_the_real_train_job_composes_from_the_loops_overrides(tmp_path):
    cfg = _cfg(tmp_path, "common=['lm@student=local_qwen15']", "train.overrides=['recipe.max_train_seconds=60']")
    train = compose_config("train", train_overrides(cfg, "extract_claims", str(tmp_path / "reflow")))
    assert train.recipe.name == "sft_extract_claims" and train.dataset.name == "claims_bench"
    assert train.dataset.extra == str(tmp_path / "reflow") and train.recipe.max_train_seconds == 60
    assert train.teacher._target_.endswith("GoldTeacher")
    evaluate = compose_config("evaluate", evaluate_overrides(cfg, tmp_path, 1, {}, {"extract_claims": "/a/adapter"}))
    assert evaluate.stage.extract_claims.lora == "/a/adapter"
    plain = _cfg(tmp_path, "common=['stage.extract_claims.lora=null']")
    assert compose_config("evaluate", evaluate_overrides(plain, tmp_path, 0, {})).stage.extract_claims.lora is None
    trained = compose_config("evaluate", evaluate_overrides(plain, tmp_path, 1, {}, {"extract_claims": "/a/b"}))
    assert trained.stage.extract_claims.lora == "/a/b"
