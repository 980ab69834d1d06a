"""Build the checking pipeline of a composed config (conf/pipeline/default.yaml, shared by verify.py and
evaluate.py): the seven stages, the retriever over the sources, the business rules, the student LM and the claim
cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from factlab.pipeline.cache import ClaimCache, fingerprint
from factlab.pipeline.pipeline import Pipeline
from factlab.programs import STAGES
from factlab.retrieval.ingest import check_folder
from factlab.retrieval.retriever import Retriever
from factlab.runtime import cache_root
from factlab.stages.build import build_program


def build_stages(cfg: DictConfig, store: str | None = None) -> dict:
    """Every stage built per its config (program / compiled program `cfg.programs[stage]` / classifier)."""
    return {s: build_program(cfg.stage[s], cfg.programs[s], store) for s in STAGES}


def index_dir_for(cfg: DictConfig) -> Path:
    """`cfg.index_dir`, else a cache folder keyed by the sources path (<cache root>/index/<hash>)."""
    if cfg.index_dir:
        return Path(cfg.index_dir)
    key = hashlib.sha256(str(Path(cfg.sources).resolve()).encode()).hexdigest()[:12]
    return cache_root() / "index" / key


def build_pipeline(cfg: DictConfig, student=None, retriever=None, store: str | None = None
                   ) -> tuple[Pipeline, Retriever]:
    """The pipeline of a composed verify/evaluate config.

    Args:
        cfg: the composed config.
        student: the LM handle (tests pass one); None = built from `cfg.student`.
        retriever: the retriever (tests pass one); None = built over `cfg.sources`.
        store: the MLflow store that program references are looked up in; None = the store rule.
    """
    sources = Path(cfg.sources)
    if retriever is None:
        check_folder(sources)  # missing / empty folder -> a clear error before any model loads
        retriever = Retriever.build(sources, index_dir_for(cfg), cfg.retrieval)
    if student is None:
        student = instantiate(cfg.student)
    rules = instantiate(cfg.business)
    stages = build_stages(cfg, store)
    cache = None
    if cfg.claim_cache.enabled:
        setup = fingerprint({
            "stages": OmegaConf.to_container(cfg.stage), "programs": OmegaConf.to_container(cfg.programs),
            "lm": {k: v for k, v in (student.info if student else {}).items() if k != "port"},
            "index": fingerprint(retriever.index.manifest["files"]),
            "business": OmegaConf.to_container(cfg.business), "k": cfg.k,
        })
        cache = ClaimCache(cache_root() / "claims.sqlite", setup,
                           embed=retriever.encoder.encode, threshold=cfg.claim_cache.near_threshold)
    pipeline = Pipeline(stages, retriever, rules, student, k=cfg.k, max_workers=cfg.max_workers,
                        context_chars=cfg.context_chars, cache=cache,
                        sources=list(retriever.index.sources.values()), progress=cfg.progress)
    return pipeline, retriever
