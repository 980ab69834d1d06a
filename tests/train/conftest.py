"""Fixtures of the training tests: tiny local models (built once per session), bundled cases split once, a job."""

from __future__ import annotations

from pathlib import Path

import pytest
from train_support import RecordingTracker, write_tiny_bert, write_tiny_qwen

from factlab.config import CONF_DIR
from factlab.data.loaders.case_files import load as load_case_files
from factlab.data.splits import split_cases
from factlab.train.job import TrainJob
from factlab.train.teacher import GoldTeacher

REPO_ROOT = CONF_DIR.parent


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Tiny models on a shared 2-core CPU: one thread avoids OpenMP spin-waits (3x faster here); restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory) -> Path:
    return write_tiny_qwen(tmp_path_factory.mktemp("tiny_qwen"))


@pytest.fixture(scope="session")
def bundled_splits() -> dict[str, list[dict]]:
    """The bundled cases (the repo's own data), split 80/10/10 with seed 0."""
    cases = load_case_files(name="bundled", data_root=str(REPO_ROOT / "datasets" / "bundled"),
                            files=["cases_*.jsonl"])
    return split_cases(cases, {"train": 0.8, "val": 0.1, "test": 0.1}, seed=0)


@pytest.fixture
def make_job(bundled_splits, tmp_path):
    """`make_job(name="job", teacher=GoldTeacher())` -> a TrainJob in tmp_path/<name> with a RecordingTracker."""

    def build(name: str = "job", teacher=None, splits=None) -> TrainJob:
        return TrainJob(splits=splits or bundled_splits, teacher=teacher or GoldTeacher(), tracker=RecordingTracker(),
                        work_dir=tmp_path / name, seed=0, resume=True, registered_name="factlab-test",
                        dataset="bundled")

    return build
