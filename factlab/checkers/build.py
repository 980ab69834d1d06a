"""Build the checker a composed config names (`checker=fast | professional | funnel | nearline`, conf/checker/).

Every checker answers `check(document, name) -> Report` and `run(document, name, fixed) -> DocumentTrace` (the trace
evaluate.py scores), with the same cards. Models are loaded here, once per process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from factlab.checkers.claims import ClaimQueries, GroundedReview, SentenceClaims
from factlab.checkers.fast import FastChecker
from factlab.pipeline.build import build_pipeline, index_dir_for, layer_options
from factlab.programs.paragraphs import ParagraphSplitter
from factlab.retrieval.ingest import check_folder
from factlab.retrieval.retriever import Retriever
from factlab.stages.classifiers import load_stage_classifier

CHECKERS = ("fast", "professional", "funnel", "nearline")


def checker_name(cfg: DictConfig) -> str:
    """The configured checker's name (professional when the config has no checker group)."""
    name = str(OmegaConf.select(cfg, "checker.name", default="professional"))
    if name not in CHECKERS:
        raise ValueError(f"checker={name!r}: expected one of {', '.join(CHECKERS)} (conf/checker/)")
    return name


def fast_stages(checker_cfg: DictConfig, paragraphs_cfg: DictConfig | None = None, store: str | None = None) -> dict:
    """The fast checker's seven stages: the trained classifiers of `checker_cfg.models`, the rest deterministic."""
    splitter = instantiate(paragraphs_cfg.program, use_lm=False) if paragraphs_cfg is not None else ParagraphSplitter()
    models = checker_cfg.models
    return {
        "paragraphs": splitter,
        "checkworthy": load_stage_classifier("checkworthy", models.checkworthy, batch_size=checker_cfg.batch_size,
                                             int8=checker_cfg.int8),
        "extract_claims": SentenceClaims(),
        "review_claims": GroundedReview(checker_cfg.min_grounding),
        "vertical": load_stage_classifier("vertical", models.vertical, batch_size=checker_cfg.batch_size,
                                          int8=checker_cfg.int8),
        "query_rewrite": ClaimQueries(),
        "judge": load_stage_classifier("judge", models.judge, batch_size=checker_cfg.batch_size,
                                       int8=checker_cfg.int8, max_snippets=checker_cfg.max_snippets,
                                       **_container(checker_cfg.get("calibration") or {})),
    }


def build_retriever(cfg: DictConfig) -> Retriever:
    """The retriever over `cfg.sources` (a missing or empty folder is a clear error before any model loads)."""
    sources = Path(cfg.sources)
    check_folder(sources)
    return Retriever.build(sources, index_dir_for(cfg), cfg.retrieval)


def build_fast(cfg: DictConfig, checker_cfg: DictConfig, retriever: Retriever | None = None,
               store: str | None = None) -> FastChecker:
    """The fast checker of `checker_cfg` over `cfg`'s sources, business rules and retrieval."""
    retriever = retriever if retriever is not None else build_retriever(cfg)
    return FastChecker(
        fast_stages(checker_cfg, cfg.stage.paragraphs, store), retriever, instantiate(cfg.business), k=cfg.k,
        max_workers=checker_cfg.max_workers, max_snippets=checker_cfg.max_snippets,
        sources=list(retriever.index.sources.values()), progress=cfg.progress,
        skipped_sources=[str(issue) for issue in retriever.issues], min_grounding=checker_cfg.min_grounding,
        snippet_tokens=checker_cfg.snippet_tokens,
        consistency=_container(checker_cfg.consistency), **layer_options(cfg, store, lm=False))


def build_professional(cfg: DictConfig, checker_cfg: DictConfig | None, student=None, retriever=None,
                       store: str | None = None):
    """Today's LM pipeline, with the professional checker's grounding / consistency / paragraph settings."""
    options = {} if checker_cfg is None else {
        "min_grounding": checker_cfg.min_grounding, "consistency": _container(checker_cfg.consistency),
        "paragraph_workers": checker_cfg.paragraph_workers,
        "agent": instantiate(checker_cfg.multi_round, _partial_=True) if checker_cfg.multi_round_when else None,
        "agent_when": list(checker_cfg.multi_round_when)}
    return build_pipeline(cfg, student=student, retriever=retriever, store=store, **options)[0]


def build_checker(cfg: DictConfig, student=None, retriever: Retriever | None = None, store: str | None = None):
    """The checker `cfg.checker` names, over `cfg.sources`.

    Args:
        cfg: a composed verify / evaluate config.
        student: the LM handle of the professional path (tests pass one); None = built from `cfg.student` where
            the checker needs one (never for `fast`).
        retriever: the retriever (tests pass one); None = built over `cfg.sources`.
        store: the MLflow store model and program references are looked up in.
    """
    from factlab.checkers.funnel import FunnelChecker, FunnelPolicy

    name = checker_name(cfg)
    if name == "nearline":
        raise ValueError("checker=nearline checks a folder or JSONL of documents: run it with verify.py "
                         "checker=nearline input=<folder or .jsonl> (factlab.checkers.nearline.run)")
    checker_cfg = OmegaConf.select(cfg, "checker")
    if name == "fast":
        return build_fast(cfg, checker_cfg, retriever, store)
    if name == "professional":
        return build_professional(cfg, checker_cfg, student, retriever, store)
    retriever = retriever if retriever is not None else build_retriever(cfg)
    fast = build_fast(cfg, checker_cfg.fast, retriever, store)
    professional = build_professional(cfg, checker_cfg.professional, student, retriever, store)
    return FunnelChecker(fast, professional, FunnelPolicy(**_container(checker_cfg.escalate)))


def _container(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
