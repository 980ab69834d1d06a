"""The whole config stops at the entry point: `build_checker(cfg)` is the one place config becomes objects. After it
returns, checking a document reads no config node at all: every OmegaConf read is recorded and fails the test (a part
that kept a DictConfig, or a builder that reads config lazily, would be caught here)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest
from omegaconf import DictConfig, ListConfig, OmegaConf

from factlab.checkers.build import build_checker
from factlab.config import compose_config

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = (ROOT / "datasets" / "bundled" / "examples" / "report_en_short.md").read_text(encoding="utf-8")
CORPUS = ROOT / "datasets" / "bundled" / "corpus"
SCRIPTED = ["student._target_=scripted_lm.scripted_lm", "claim_cache.enabled=false"]
_READS = {DictConfig: ("__getattr__", "__getitem__", "get", "items", "keys", "values", "__iter__", "__contains__"),
          ListConfig: ("__getitem__", "__iter__", "__len__", "__contains__")}


@contextmanager
def config_reads_recorded():
    """Every read of any OmegaConf node inside the block, as (class, method, key)."""
    reads, originals = [], {}
    for cls, names in _READS.items():
        for name in names:
            original = originals[(cls, name)] = getattr(cls, name)

            def recording(self, *args, _name=name, _original=original, _cls=cls, **kwargs):
                reads.append((_cls.__name__, _name, args[0] if args else None))
                return _original(self, *args, **kwargs)

            setattr(cls, name, recording)
    try:
        yield reads
    finally:
        for (cls, name), original in originals.items():
            setattr(cls, name, original)


def _checked_without_config(overrides: list[str], tmp_path, monkeypatch) -> list:
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "golden"))  # scripted_lm, the LM of the professional path
    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path / "cache"))
    cfg = compose_config("verify", ["input=x", f"sources={CORPUS}", "progress=false", *overrides])
    cfg.retrieval.encoder = OmegaConf.create({"_target_": "factlab.retrieval.encoders.HashingEncoder", "dim": 256})
    cfg.index_dir = str(tmp_path / "index")
    checker = build_checker(cfg)
    with config_reads_recorded() as reads:
        report = checker.check(DOCUMENT, name="report_en_short.md")
    assert report.summary["claims"] > 0
    return reads


def test_the_recorder_sees_a_config_read():
    node = compose_config("verify", ["input=x", "sources=y"])
    with config_reads_recorded() as reads:
        assert node.checker.name == "fast"
    assert reads


def test_a_professional_check_reads_no_config_after_the_build(tmp_path, monkeypatch):
    assert _checked_without_config(["checker=professional", *SCRIPTED], tmp_path, monkeypatch) == []


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["fast", "funnel"])
def test_the_fast_and_funnel_checks_read_no_config_after_the_build(checker, tmp_path, monkeypatch):
    assert _checked_without_config([f"checker={checker}", *SCRIPTED], tmp_path, monkeypatch) == []


def test_a_part_that_kept_its_config_is_caught(tmp_path, monkeypatch):
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "golden"))
    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path / "cache"))
    cfg = compose_config("verify", ["input=x", f"sources={CORPUS}", "progress=false", "checker=professional",
                                    *SCRIPTED])
    cfg.retrieval.encoder = OmegaConf.create({"_target_": "factlab.retrieval.encoders.HashingEncoder", "dim": 256})
    cfg.index_dir = str(tmp_path / "index")
    checker = build_checker(cfg)
    checker.parts.verdict.consistency = cfg.checker.verdict.consistency or OmegaConf.create({"max_tier": 1,
                                                                                           "min_overlap": 0.6})
    with config_reads_recorded() as reads:
        checker.check(DOCUMENT)
    assert reads  # the leak this file guards against
