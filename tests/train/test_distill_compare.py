"""factlab.train.distill.compare (scripts/distill_table.py): distilled classifiers against their teachers and a
reference run, with intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.train.distill.compare import PredictionsError, compare_runs, main, read_predictions


def _rows(predicted: list[str], teacher: list[str | None]) -> list[dict]:
    gold = ["checkworthy", "not_checkworthy"] * (len(predicted) // 2)
    triples = zip(gold, predicted, teacher, strict=True)
    return [{"case_id": f"c{i // 2}", "text": f"sentence {i}", "pair": None, "gold": g, "teacher": t, "predicted": p,
             "lang": "zh" if i % 4 < 2 else "en"} for i, (g, p, t) in enumerate(triples)]


def _write(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / "test_predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_each_run_is_scored_against_the_gold_beside_its_teacher_and_paired_with_the_reference():
    n = 40
    gold_run = _rows(["checkworthy", "not_checkworthy"] * (n // 2), ["checkworthy", "not_checkworthy"] * (n // 2))
    # the LM teacher says checkworthy everywhere; its student copies it on the first half, is right on the second
    lm_run = _rows(["checkworthy"] * (n // 2) + ["checkworthy", "not_checkworthy"] * (n // 4), ["checkworthy"] * n)
    out = compare_runs({"gold": gold_run, "lm": lm_run}, reference="gold", samples=300)
    gold, lm = out["rows"]
    assert (gold["accuracy"], gold["teacher_accuracy"], gold["gain_over_teacher"]) == (1.0, 1.0, 0.0)
    assert gold["gain_over_reference"] is None
    assert lm["teacher_accuracy"] == 0.5 and lm["accuracy"] == 0.75
    assert lm["gain_over_teacher"] == pytest.approx(0.25) and lm["gain_over_reference"] == pytest.approx(-0.25)
    low, high = lm["gain_over_teacher_ci"]
    assert 0 < low <= 0.25 <= high  # resampled by case: the interval holds the point and excludes 0 here
    assert lm["cases"] == n // 2 and set(lm["by_lang"]) == {"en", "zh"}
    assert "| lm | 40 (20) | 0.750 [" in out["table"]


def test_a_teacher_without_a_target_is_left_out_of_its_own_score():
    rows = _rows(["checkworthy", "not_checkworthy"] * 4, ["checkworthy", None] * 4)
    (row,) = compare_runs({"lm": rows}, samples=50)["rows"]
    assert row["teacher_rows"] == 4 and row["teacher_accuracy"] == 1.0 and row["accuracy"] == 1.0


def test_bad_prediction_files_name_the_file_line_and_field(tmp_path):
    folder = _write(tmp_path / "run", _rows(["checkworthy", "not_checkworthy"], ["checkworthy", None]))
    assert len(read_predictions(folder)) == 2
    path = folder / "test_predictions.jsonl"
    path.write_text(path.read_text() + '{"gold": "checkworthy"}\n')
    with pytest.raises(PredictionsError, match=r"test_predictions.jsonl:3: missing field 'teacher'"):
        read_predictions(folder)
    path.write_text("{not json\n")
    with pytest.raises(PredictionsError, match=r":1: not JSON"):
        read_predictions(path)
    with pytest.raises(PredictionsError, match="no such file"):
        read_predictions(tmp_path / "missing")
    with pytest.raises(ValueError, match="reference 'x' is not one of the runs"):
        compare_runs({"a": _rows(["checkworthy", "not_checkworthy"], ["checkworthy", None])}, reference="x")


def test_the_script_prints_and_writes_the_table(tmp_path, capsys):
    a = _write(tmp_path / "a", _rows(["checkworthy", "not_checkworthy"] * 4, ["checkworthy", "not_checkworthy"] * 4))
    b = _write(tmp_path / "b", _rows(["checkworthy"] * 8, ["checkworthy"] * 8))
    out = main([f"gold={a}", f"lm={b / 'test_predictions.jsonl'}", "--reference", "gold", "--samples", "50",
                "--out", str(tmp_path / "t.md")])
    assert [r["name"] for r in out["rows"]] == ["gold", "lm"]
    assert "classifier - gold" in capsys.readouterr().out
    assert (tmp_path / "t.md").read_text().startswith("| run |")
    with pytest.raises(SystemExit):
        main(["no-equals-sign"])
