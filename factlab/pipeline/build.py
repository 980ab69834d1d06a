"""Build the checking pipeline of a composed config (conf/pipeline/default.yaml, shared by verify.py and
evaluate.py): the seven stages, the retriever over the sources, the business rules, the student LM and the claim
cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from factlab.pipeline.cache import ClaimCache, code_fingerprint, fingerprint
from factlab.pipeline.logic import LogicLayer
from factlab.pipeline.pipeline import Pipeline
from factlab.programs import STAGES
from factlab.retrieval.ingest import check_folder
from factlab.retrieval.retriever import Retriever
from factlab.runtime import cache_root
from factlab.stages.build import build_program, stage_identity
from factlab.stages.routed import ByVertical

# stage -> the input field whose text the vertical stage classifies, for stages that can have a program per vertical
ROUTED_FIELDS = {"extract_claims": "paragraph"}


def build_stages(cfg: DictConfig, store: str | None = None) -> dict:
    """Every stage built per its config (program / compiled program `cfg.programs[stage]` / classifier); a stage
    named in `cfg.by_vertical` with a {vertical: compiled program} mapping answers with that vertical's program,
    chosen by the vertical stage on its input (factlab.stages.routed.ByVertical)."""
    stages = {s: build_program(cfg.stage[s], cfg.programs[s], store) for s in STAGES}
    for stage, refs in cfg.by_vertical.items():
        if not refs:
            continue
        if stage not in ROUTED_FIELDS:
            raise ValueError(f"by_vertical.{stage}: only {', '.join(ROUTED_FIELDS)} can have a program per vertical")
        programs = {str(v): build_program(cfg.stage[stage], ref, store) for v, ref in refs.items()}
        stages[stage] = ByVertical(stages[stage], programs, stages["vertical"], ROUTED_FIELDS[stage])
    return stages


def build_logic(cfg: DictConfig, store: str | None = None, lm: bool = True) -> LogicLayer | None:
    """The logic layer of `cfg.logic` (conf/logic/*.yaml): None when off, the rule path, or the LM stage `logic`
    (`cfg.stage.logic` with the compiled program `cfg.programs.logic`). `lm=False` (a checker without an LM) refuses
    the stage engine with a clear error."""
    engine = str(cfg.logic.engine)
    if engine == "off":
        return None
    if engine not in ("rules", "stage"):
        raise ValueError(f"logic.engine={engine!r}: expected rules, stage or off (conf/logic/)")
    rules = instantiate(cfg.logic.rules)
    if engine == "rules":
        return LogicLayer(rules, context_chars=cfg.logic.context_chars)
    if not lm:
        raise ValueError("logic=stage needs an LM, and this checker runs none: use logic=rules or logic=off")
    program = build_program(cfg.stage.logic, OmegaConf.select(cfg, "programs.logic"), store)
    return LogicLayer(rules, program, cfg.logic.context_chars)


def index_dir_for(cfg: DictConfig) -> Path:
    """`cfg.index_dir`, else a cache folder keyed by the sources path (<cache root>/index/<hash>)."""
    if cfg.index_dir:
        return Path(cfg.index_dir)
    key = hashlib.sha256(str(Path(cfg.sources).resolve()).encode()).hexdigest()[:12]
    return cache_root() / "index" / key


# Fields of an LM config that change how it runs, not what it answers: left out of the claim cache's setup.
_LM_RUNTIME_KEYS = frozenset({"port", "n_threads", "timeout_s", "num_retries", "start_timeout_s", "reuse_running",
                              "cache"})


def claim_setup(cfg: DictConfig, student, retriever, store: str | None = None) -> str:
    """The claim cache's setup fingerprint: everything that decides a claim's card. The stages with the content of
    their compiled programs and trained models, the LM, the index's files and every retrieval setting, the business
    rules, k, and the code of the packages that decide a verdict."""
    lm = {k: v for k, v in OmegaConf.to_container(cfg.student, resolve=True).items() if k not in _LM_RUNTIME_KEYS}
    routed = {stage: {str(v): stage_identity(cfg.stage[stage], ref, store) for v, ref in refs.items()}
              for stage, refs in cfg.by_vertical.items() if refs}
    return fingerprint({
        "stages": {s: stage_identity(cfg.stage[s], cfg.programs[s], store) for s in STAGES},
        **({"by_vertical": routed} if routed else {}),  # absent when unused: existing caches stay valid
        "lm": {**lm, "info": {k: v for k, v in (student.info if student else {}).items() if k != "port"}},
        "index": fingerprint(retriever.index.manifest["files"]),
        "retrieval": OmegaConf.to_container(cfg.retrieval, resolve=True),
        "business": OmegaConf.to_container(cfg.business, resolve=True), "k": cfg.k,
        "verticals": OmegaConf.to_container(cfg.verticals, resolve=True),
        "timeliness": OmegaConf.to_container(cfg.timeliness, resolve=True),
        "code": code_fingerprint(),
    })


def layer_options(cfg: DictConfig, store: str | None = None, lm: bool = True) -> dict:
    """The settings of the layers beyond single claims, shared by every checker: the routing table, the consistency
    layer's checks, the vertical checkers, the logic layer, the timeliness check and the paragraph typer."""
    timeliness = instantiate(cfg.timeliness)
    return {"routing": instantiate(cfg.routing), "document_checks": list(cfg.document_checks),
            "verticals": instantiate(cfg.verticals), "logic": build_logic(cfg, store, lm=lm),
            "timeliness": timeliness if timeliness.enabled else None, "typer": build_typer(cfg, store, lm=lm)}


def build_typer(cfg: DictConfig, store: str | None = None, lm: bool = True):
    """The paragraph_type stage when `cfg.paragraph_typer` is `stage` (None = the routing table's patterns); a
    checker without an LM can only serve its classifier backend."""
    typer = str(OmegaConf.select(cfg, "paragraph_typer", default="rules"))
    if typer == "rules":
        return None
    if typer != "stage":
        raise ValueError(f"paragraph_typer={typer!r}: expected rules or stage")
    if not lm and cfg.stage.paragraph_type.backend != "classifier":
        raise ValueError("paragraph_typer=stage on a checker without an LM needs stage.paragraph_type.backend="
                         "classifier and stage.paragraph_type.model=<a model of recipe=distill_paragraph_type>")
    return build_program(cfg.stage.paragraph_type, OmegaConf.select(cfg, "programs.paragraph_type"), store)


def build_pipeline(cfg: DictConfig, student=None, retriever=None, store: str | None = None, **options
                   ) -> tuple[Pipeline, Retriever]:
    """The pipeline of a composed verify/evaluate config.

    Args:
        cfg: the composed config.
        student: the LM handle (tests pass one); None = built from `cfg.student`.
        retriever: the retriever (tests pass one); None = built over `cfg.sources`.
        store: the MLflow store that program references are looked up in; None = the store rule.
        options: further `Pipeline` settings (min_grounding, consistency, paragraph_workers: conf/checker/professional).
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
        cache = ClaimCache(cache_root() / "claims.sqlite", claim_setup(cfg, student, retriever, store),
                           embed=retriever.encoder.encode, threshold=cfg.claim_cache.near_threshold)
    options = {**layer_options(cfg, store), **options}
    pipeline = Pipeline(stages, retriever, rules, student, k=cfg.k, max_workers=cfg.max_workers,
                        context_chars=cfg.context_chars, cache=cache,
                        sources=list(retriever.index.sources.values()), progress=cfg.progress,
                        skipped_sources=[str(issue) for issue in retriever.issues], **options)
    return pipeline, retriever
