"""The judge's long run end to end on tiny sets (real e5 base, a few steps): checkpoints, resume, the shipped form,
and the scoring command on what it wrote. Slow: it builds the e5 folder and trains."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from factlab.judge.train import JudgeSettings, train_judge
from factlab.train.job import TrainJob

pytestmark = pytest.mark.slow

EN = [("A man is playing a guitar.", "A person plays an instrument.", "entailment"),
      ("A man is playing a guitar.", "Nobody is playing music.", "contradiction"),
      ("A man is playing a guitar.", "The man is a famous singer.", "neutral")] * 6
ZH = [("一个男人在弹吉他。", "有人在演奏乐器。", "entailment"),
      ("一个男人在弹吉他。", "没有人在演奏音乐。", "contradiction"),
      ("一个男人在弹吉他。", "这个男人是著名歌手。", "neutral")] * 6


def _write(root: Path, name: str, rows) -> None:
    (root / name).write_text("".join(json.dumps({"p": p + f" ({i})", "h": h, "label": lab}, ensure_ascii=False) + "\n"
                                     for i, (p, h, lab) in enumerate(rows)), encoding="utf-8")


def _settings(root: Path, total_steps: int, stretch_minutes: float = 30) -> JudgeSettings:
    spec = {"reader": "jsonl", "evidence": "p", "claim": "h", "label": "label"}
    return JudgeSettings(
        data_root=str(root), base_model="pkg://factlab.models.e5", max_length=48, window_stride=8,
        lora={"r": 2, "alpha": 4, "dropout": 0.0, "target_modules": ["query", "value"]}, batch_size=4,
        learning_rate=1e-3, head_learning_rate=1e-3, weight_decay=0.0, warmup_steps=1, total_steps=total_steps,
        pool_batches=2, eval_every=2, eval_rows=6, checkpoint_minutes=15, stretch_minutes=stretch_minutes,
        pilot_steps=10_000, pilot_margin=0.05, pilot_sets=["lingnli_val"], plateau=-1.0, shuffle_share=0.1,
        edit_share=0.1,
        bundled_weight=1.0, val_per_lang=6,
        sets={"toy_en": {**spec, "files": ["en.jsonl"], "lang": "en"}, "toy_zh": {**spec, "files": ["zh.jsonl"],
                                                                                   "lang": "zh"}},
        targets={"lingnli_val": {**spec, "files": ["en_val.jsonl"], "lang": "en"},
                 "xnli_zh_test": {**spec, "files": ["zh_val.jsonl"], "lang": "zh"}})


def test_run_checkpoints_resumes_and_writes_a_judge_the_command_scores_with(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "en.jsonl", EN)
    _write(data, "zh.jsonl", ZH)
    _write(data, "en_val.jsonl", EN[:6])
    _write(data, "zh_val.jsonl", ZH[:6])
    job = TrainJob(splits={"train": []}, teacher=None, work_dir=tmp_path / "work", seed=0)
    # a stretch of 0.03 s: one step, then the invocation stops as a killed one would, its checkpoint on disk
    first = train_judge(job, _settings(data, 4, stretch_minutes=0.0005), "toy")
    assert first["val/steps"] == 1 and (tmp_path / "work" / "checkpoint.pt").is_file()
    second = train_judge(job, _settings(data, 4), "toy")  # the same command again resumes
    assert "resumed at step 1" in capsys.readouterr().out
    assert second["val/steps"] == 4
    curve = [json.loads(line) for line in (tmp_path / "work" / "curve.jsonl").read_text().splitlines()]
    assert [p["step"] for p in curve] == [2, 4]
    model = Path(second["model_uri"])
    meta = json.loads((model / "judge.json").read_text())
    assert meta["calibration"]["temperature"] > 0 and meta["adapter_dtype"] == "float16"
    assert (model / "adapter.safetensors").stat().st_size < 2_000_000
    overlap = json.loads((tmp_path / "work" / "overlap.json").read_text())
    assert overlap["dropped"]  # the val files repeat training premises: dropped as target premises

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"claim": "有人在演奏乐器。", "evidence": "一个男人在弹吉他。", "id": 7},
                                ensure_ascii=False) + "\n" + json.dumps({"claim": "A", "evidence": "B " * 200}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    done = subprocess.run([sys.executable, "-m", "factlab.judge", "--input", str(pairs), "--output", str(out),
                           "--model", str(model), "--no-progress"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.get("id") for r in rows] == [7, None]
    assert set(rows[0]) >= {"claim", "evidence", "relation", "probs", "p_support", "supported"}
    assert abs(sum(rows[0]["probs"].values()) - 1) < 1e-3 and rows[0]["p_support"] == rows[0]["probs"]["support"]

    (model / "adapter.safetensors").write_bytes(b"tampered")
    done = subprocess.run([sys.executable, "-m", "factlab.judge", "--input", str(pairs), "--output", str(out),
                           "--model", str(model)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "sha256" in done.stderr


def test_bad_rows_are_named_by_line(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"claim": "a", "evidence": "b"}\n{"claim": "a"}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "factlab.judge", "--input", str(pairs), "--output",
                           str(tmp_path / "o.jsonl")], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "pairs.jsonl:2: field 'evidence'" in done.stderr
