"""Run dirs: the config hash ignores tracking and cosmetic keys, and a dir never serves another config."""

from __future__ import annotations

import json

import pytest

from factlab.optimize.runs import (
    RunDirError,
    claim_state_dir,
    fingerprint,
    prepare_run_dir,
    record_mlflow_run,
    recorded_mlflow_run,
)

CONFIG = {"stage": {"name": "judge"}, "optimizer": {"name": "gepa", "seed": 0}, "tracking": {"uri": "a"},
          "student": {"name": "s", "port": None}}
IGNORE = ["tracking", "student.port", "sweep_id"]


def test_ignored_keys_do_not_change_the_run_dir(tmp_path):
    first, resumed = prepare_run_dir(tmp_path, "judge", "gepa", fingerprint(CONFIG, IGNORE, "h"), True)
    moved = {**CONFIG, "tracking": {"uri": "b"}, "student": {"name": "s", "port": 8080}, "sweep_id": "x"}
    second, resumed_again = prepare_run_dir(tmp_path, "judge", "gepa", fingerprint(moved, IGNORE, "h"), True)
    assert first == second and not resumed and resumed_again
    assert first.name.startswith("gepa-") and first.parent.name == "judge"


@pytest.mark.parametrize("change", [{"optimizer": {"name": "gepa", "seed": 1}}, {"student": {"name": "t"}}])
def test_a_different_config_or_dataset_gets_another_dir(tmp_path, change):
    base, _ = prepare_run_dir(tmp_path, "judge", "gepa", fingerprint(CONFIG, IGNORE, "h"), True)
    other, resumed = prepare_run_dir(tmp_path, "judge", "gepa", fingerprint({**CONFIG, **change}, IGNORE, "h"), True)
    data, _ = prepare_run_dir(tmp_path, "judge", "gepa", fingerprint(CONFIG, IGNORE, "other data"), True)
    assert len({base, other, data}) == 3 and not resumed


def test_a_dir_stamped_by_another_fingerprint_is_refused(tmp_path):
    run_dir, _ = prepare_run_dir(tmp_path, "judge", "gepa", fingerprint(CONFIG, IGNORE, "h"), True)
    (run_dir / "fingerprint.json").write_text(json.dumps({"config": {}, "dataset_content_hash": "x"}))
    with pytest.raises(RunDirError, match="another config"):
        prepare_run_dir(tmp_path, "judge", "gepa", fingerprint(CONFIG, IGNORE, "h"), True)


def test_unstamped_optimizer_state_is_refused_so_gepa_cannot_silently_resume_it(tmp_path):
    stale = tmp_path / "gepa"
    stale.mkdir()
    (stale / "gepa_state.bin").write_bytes(b"old run")
    with pytest.raises(RunDirError, match="silently resume"):
        claim_state_dir(stale, fingerprint(CONFIG, IGNORE, "h"))
    fresh = claim_state_dir(tmp_path / "new", fingerprint(CONFIG, IGNORE, "h"))
    assert claim_state_dir(fresh, fingerprint(CONFIG, IGNORE, "h")) == fresh


def test_mlflow_run_ids_are_remembered_per_store(tmp_path):
    record_mlflow_run(tmp_path, "sqlite:///a.db", "r1")
    record_mlflow_run(tmp_path, "sqlite:///b.db", "r2")
    record_mlflow_run(tmp_path, None, "ignored")
    assert recorded_mlflow_run(tmp_path, "sqlite:///a.db") == "r1"
    assert recorded_mlflow_run(tmp_path, "sqlite:///b.db") == "r2"
    assert recorded_mlflow_run(tmp_path, "sqlite:///c.db") is None and recorded_mlflow_run(tmp_path, None) is None
