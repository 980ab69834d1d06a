"""Torn or stale state never sinks a run or blocks resume (issue 13.5), and the smaller input issues of 13.6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.atomic import read_json
from factlab.optimize.runs import (
    FINGERPRINT_FILE,
    MLFLOW_RUNS_FILE,
    prepare_run_dir,
    record_mlflow_run,
    recorded_mlflow_run,
)
from factlab.runtime import resolve_bf16
from factlab.train.trainer_support import resumable_checkpoint


def test_a_torn_trainer_checkpoint_is_set_aside_and_the_previous_one_resumes(tmp_path):
    for step, whole in ((10, True), (20, True), (30, False)):  # the run was killed while writing checkpoint-30
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x")
        if whole:
            (folder / "trainer_state.json").write_text("{}")
    assert Path(resumable_checkpoint(tmp_path, resume=True)).name == "checkpoint-20"
    assert (tmp_path / "checkpoint-30.torn").is_dir() and not (tmp_path / "checkpoint-30").exists()
    assert resumable_checkpoint(tmp_path, resume=False) is None


def test_torn_run_records_do_not_raise_on_rerun(tmp_path, caplog):
    run_dir, resumed = prepare_run_dir(tmp_path, "judge", "gepa", {"config": {"a": 1}}, resume=True)
    assert not resumed
    record_mlflow_run(run_dir, "sqlite:///x.db", "run-1")
    (run_dir / MLFLOW_RUNS_FILE).write_text('{"sqlite:///x.db": "ru')  # a killed write
    (run_dir / FINGERPRINT_FILE).write_text('{"config": {"a"')
    again, resumed = prepare_run_dir(tmp_path, "judge", "gepa", {"config": {"a": 1}}, resume=True)
    assert again == run_dir and resumed  # its state is this config's (the dir name is the config hash)
    assert recorded_mlflow_run(run_dir, "sqlite:///x.db") is None  # unreadable: a new MLflow run, not a crash
    assert json.loads((run_dir / FINGERPRINT_FILE).read_text()) == {"config": {"a": 1}}
    assert "moved aside" in caplog.text and list(run_dir.glob("*.torn"))


def test_read_json_sets_a_torn_file_aside(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("{not json")
    assert read_json(path, {"fresh": True}, "test state") == {"fresh": True}
    assert (tmp_path / "state.json.torn").exists() and not path.exists()


def test_bf16_is_on_only_where_the_cpu_computes_it(monkeypatch):
    import factlab.runtime as runtime

    runtime.cpu_bf16.cache_clear()
    monkeypatch.setattr(runtime, "cpu_bf16", lambda: (False, "no native bf16 on this CPU (flags: AVX2)"))
    assert resolve_bf16("auto") == (False, "auto: no native bf16 on this CPU (flags: AVX2)")
    on, why = resolve_bf16(True)
    assert on and "much slower" in why
    monkeypatch.setattr(runtime, "cpu_bf16", lambda: (True, "native bf16 (amx_bf16)"))
    assert resolve_bf16("auto")[0] is True
    with pytest.raises(ValueError, match="true, false or auto"):
        resolve_bf16("yes")


def test_the_recipes_default_to_auto_bf16():
    from factlab.config import compose_config

    for recipe in ("distill_judge", "sft_query_rewrite"):
        assert compose_config("train", [f"recipe={recipe}"]).recipe.bf16 == "auto"


def test_a_jsonl_source_warning_names_its_line_and_reaches_the_report(tmp_path):
    from factlab.cards.build import build_report
    from factlab.cards.html import render_html
    from factlab.retrieval.config import load_retrieval_config
    from factlab.retrieval.encoders import HashingEncoder
    from factlab.retrieval.retriever import Retriever

    folder = tmp_path / "sources"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"source_id": "a", "text": "Fleming found penicillin in 1928."}\n'
                                         "{broken json\n", encoding="utf-8")
    retriever = Retriever.build(folder, tmp_path / "index", load_retrieval_config(["retrieval.index.progress=false"]),
                                encoder=HashingEncoder())
    issues = [str(i) for i in retriever.issues]
    assert issues and issues[0].startswith("corpus.jsonl:2: invalid JSON")
    report = build_report(document="d", business="default", paragraphs=[], skipped_sources=issues)
    assert report.summary["skipped_sources"] == 1 and "corpus.jsonl:2: invalid JSON" in render_html(report)
