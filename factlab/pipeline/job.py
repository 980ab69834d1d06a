"""The verify job: build the stages, the retriever and the rules from config, check one document, write cards.

`run(cfg)` is what verify.py calls; tests call it directly with a composed config.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from factlab.models.assemble import default_cache_dir
from factlab.pipeline.cache import ClaimCache, fingerprint
from factlab.cards.model import write_cards_json
from factlab.report.html import write_report_html
from factlab.pipeline.pipeline import Pipeline
from factlab.programs import STAGES
from factlab.stages.build import build_program
from factlab.retrieval.ingest import check_folder
from factlab.retrieval.retriever import Retriever
from factlab.runtime import configure_lm_cache, prepare_offline_env
from factlab.textio import InputError, read_text_file


def resolve_program_ref(ref: str | None, stage: str) -> str | None:
    """A compiled-program reference: a JSON path passes through; anything else is an MLflow run id."""
    if ref is None or Path(str(ref)).exists():
        return None if ref is None else str(ref)
    from factlab.tracking.refs import resolve_compiled

    return str(resolve_compiled(str(ref), stage))


def build_stages(cfg: DictConfig) -> dict:
    """Every stage built per its config (program / compiled program / classifier)."""
    return {s: build_program(cfg.stage[s], resolve_program_ref(cfg.programs[s], s)) for s in STAGES}


def index_dir_for(cfg: DictConfig) -> Path:
    if cfg.index_dir:
        return Path(cfg.index_dir)
    key = hashlib.sha256(str(Path(cfg.sources).resolve()).encode()).hexdigest()[:12]
    return default_cache_dir().parent / "index" / key


def build_pipeline(cfg: DictConfig, student=None, retriever=None) -> tuple[Pipeline, Retriever]:
    """The pipeline of a composed verify/evaluate config. `student` / `retriever` may be passed in (tests)."""
    sources = Path(cfg.sources)
    if retriever is None:
        check_folder(sources)  # missing / empty folder -> a clear error before any model loads
        retriever = Retriever.build(sources, index_dir_for(cfg), cfg.retrieval)
    if student is None:
        student = instantiate(cfg.student)
    rules = instantiate(cfg.business)
    stages = build_stages(cfg)
    cache = None
    if cfg.claim_cache.enabled:
        setup = fingerprint({
            "stages": OmegaConf.to_container(cfg.stage), "programs": OmegaConf.to_container(cfg.programs),
            "lm": {k: v for k, v in (student.info if student else {}).items() if k != "port"},
            "index": fingerprint(retriever.index.manifest["files"]),
            "business": OmegaConf.to_container(cfg.business), "k": cfg.k,
        })
        cache = ClaimCache(default_cache_dir().parent / "claims.sqlite", setup,
                           embed=retriever.encoder.encode, threshold=cfg.claim_cache.near_threshold)
    pipeline = Pipeline(stages, retriever, rules, student, k=cfg.k, max_workers=cfg.max_workers,
                        context_chars=cfg.context_chars, cache=cache,
                        sources=list(retriever.index.sources.values()), progress=cfg.progress)
    return pipeline, retriever


def run(cfg: DictConfig) -> dict:
    """Check `cfg.input` against `cfg.sources`; write cards.json, report.html and run.json to `cfg.output_dir`."""
    prepare_offline_env()
    configure_lm_cache(cfg.lm_cache_dir)
    document = read_text_file(cfg.input)
    if not Path(cfg.sources).exists():
        raise InputError(f"sources folder not found: {cfg.sources} (set sources=<folder>)")
    started = time.perf_counter()
    pipeline, retriever = build_pipeline(cfg)
    for issue in retriever.issues:
        print(f"warning: source skipped: {issue.path}: {issue.reason}")
    trace = pipeline.run(document, name=str(cfg.input))
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_cards_json(trace.report, out / "cards.json")
    write_report_html(trace.report, out / "report.html")
    costs = pipeline.meter.costs()
    summary = {"output_dir": str(out), "seconds": round(time.perf_counter() - started, 2),
               "summary": trace.report.summary, "costs": costs,
               "claim_cache": pipeline.cache.hits if pipeline.cache else None,
               "ingest_issues": [f"{i.path}: {i.reason}" for i in retriever.issues]}
    (out / "run.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2))
    tracker = instantiate(cfg.tracking)
    with tracker.run("verify", run_name=Path(cfg.input).name) as t:
        t.log_params(OmegaConf.to_container(cfg, resolve=True))
        t.log_metrics({f"claims/{k}": v for k, v in trace.report.summary["labels"].items()})
        t.log_artifact(out)
    return summary
