"""Fixtures of the evaluation tests: the synthetic world of eval_world.py on disk, a real Retriever on the hashing
encoder over its corpus, the default business rules, and pipelines of its rule-based stage fakes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # eval_world, for Hydra's _target_

from checker_support import professional  # noqa: E402
from eval_world import fake_stages, write_world  # noqa: E402

from factlab.checkers.professional import ProfessionalChecker  # noqa: E402
from factlab.config import compose_config  # noqa: E402
from factlab.data.cases import load_cases  # noqa: E402
from factlab.evals.evaluation import EvalSettings  # noqa: E402
from factlab.matching.claims import ClaimMatcher  # noqa: E402
from factlab.retrieval.encoders import HashingEncoder  # noqa: E402
from factlab.retrieval.retriever import Retriever  # noqa: E402

STAGE_NAMES = ("paragraphs", "checkworthy", "extract_claims", "review_claims", "vertical", "query_rewrite", "judge")


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> Path:
    return write_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="session")
def cases(world) -> list[dict]:
    return load_cases(world / "cases.jsonl")  # the schema validator accepts the world


@pytest.fixture(scope="session")
def base_cfg():
    return compose_config("evaluate", ["tracking=off"])


@pytest.fixture(scope="session")
def retriever(world, base_cfg, tmp_path_factory):
    cfg = OmegaConf.merge(base_cfg.retrieval, {"index": {"progress": False}})
    return Retriever.build(world / "corpus", tmp_path_factory.mktemp("index"), cfg, encoder=HashingEncoder())


@pytest.fixture(scope="session")
def rules(base_cfg):
    return instantiate(base_cfg.business)


@pytest.fixture
def make_pipeline(retriever, rules):
    def make(broken: dict[str, str] | None = None) -> ProfessionalChecker:
        return professional(fake_stages(broken), retriever, rules, k=5, max_workers=2, progress=False)

    return make


@pytest.fixture
def matcher():
    return ClaimMatcher(threshold=0.75, lexical_threshold=0.5, encode=HashingEncoder().encode)


@pytest.fixture(scope="session")
def settings(base_cfg):
    return EvalSettings(k=5, thresholds=dict(base_cfg.attribution.thresholds),
                        counterfactual_stages=list(base_cfg.attribution.counterfactual.stages), judge_given_gold=True)


def fake_config(world: Path, tmp_path: Path, store: Path | None, overrides: list[str] = (),
                broken: dict[str, str] | None = None):
    """conf/evaluate.yaml on the synthetic world (every case in `test` unless overridden): fake stages and student,
    hashing encoder, MLflow on the sqlite store in folder `store` (None: tracking off)."""
    cfg = compose_config("evaluate", [
        f"tracking={'off' if store is None else 'mlflow'}", "splits.train=0.0", "splits.val=0.0", "splits.test=1.0",
        f"index_dir={tmp_path / 'index'}", f"output_dir={tmp_path / 'out'}", f"cache_dir={tmp_path / 'cache'}",
        "lm_cache_dir=null", "progress=false", "bootstrap.samples=50", "retrieval.index.progress=false",
        # fake stages on a synthetic world: no classifier veto reading its texts (tests/checkers/test_veto.py)
        "checker.verdict.veto=null", *overrides])
    if store is not None:
        cfg.tracking.tracking_uri = f"sqlite:///{store / 'mlflow.db'}"
        cfg.tracking.artifact_root = str(store / "artifacts")
    cfg.dataset = OmegaConf.create({"_target_": "factlab.data.loaders.case_files.load", "name": "synthetic",
                                    "data_root": str(world), "files": ["cases.jsonl"], "max_rows": None})
    cfg.student = OmegaConf.create({"_target_": "eval_world.no_lm", "name": "fake"})
    cfg.retrieval.encoder = OmegaConf.create({"_target_": "factlab.retrieval.encoders.HashingEncoder", "dim": 256})
    for name in STAGE_NAMES:
        cfg.stage[name].program = OmegaConf.create({"_target_": "eval_world.fake_stage", "name": name,
                                                    "world": str(world), "broken": (broken or {}).get(name)})
    return cfg
