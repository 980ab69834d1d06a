"""review.py: serve the review app over one checked report, or turn its decisions into feedback (training rows for
the stages they concern, business thresholds refitted with a held-back part, adoption and risk coverage in MLflow)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict
from pathlib import Path

from omegaconf import DictConfig

from factlab.review.runs import ReviewTarget, resolve_run
from factlab.review.store import DecisionStore

logger = logging.getLogger(__name__)


def target_and_store(cfg: DictConfig) -> tuple[ReviewTarget, DecisionStore]:
    from factlab.tracking.store import tracking_uri

    return resolve_run(str(cfg.run), tracking_uri(cfg.mlflow_uri), cfg.download_dir), DecisionStore(cfg.db)


def run(cfg: DictConfig) -> dict:
    """`cfg.action`: serve (blocks until stopped) or feedback (returns its counts and metrics)."""
    target, store = target_and_store(cfg)
    if cfg.action == "serve":
        return serve(cfg, target, store)
    if cfg.action == "feedback":
        return feedback(cfg, target, store)
    raise ValueError(f"action={cfg.action!r}: expected serve or feedback (conf/review.yaml)")


def serve(cfg: DictConfig, target: ReviewTarget, store: DecisionStore) -> dict:
    import uvicorn

    from factlab.review.app import build_app

    url = f"http://{cfg.host}:{cfg.port}/"
    print(f"reviewing {target.key} ({len(target.versions())} cards; decisions in {store.path}) at {url}")
    uvicorn.run(build_app(target, store, cfg.reviewer), host=cfg.host, port=int(cfg.port), log_level="warning")
    return {"url": url, "run_key": target.key}


def feedback(cfg: DictConfig, target: ReviewTarget, store: DecisionStore) -> dict:
    """Rows, thresholds and metrics from the run's current decisions (see factlab/review/feedback.py)."""
    from hydra.utils import instantiate

    from factlab.config import CONF_DIR, compose_config, compose_option
    from factlab.data.loaders.build import resolve_path
    from factlab.evals.reflow import held_out_cases, held_out_keys, row_keys, write_rows
    from factlab.review.feedback import decided, fit_thresholds, product_metrics, row_id, training_rows
    from factlab.schema import detect_language
    from factlab.tracking.run import tracked_run

    rows = decided(target, store.current(target.key))
    metrics = product_metrics(rows)
    rules = instantiate(compose_option("business", target.report.business))
    thresholds = fit_thresholds(rows, rules, {k: list(v) for k, v in cfg.feedback.grids.items()},
                                cfg.feedback.held_back, cfg.seed)
    lang = detect_language("".join(p.text for p in target.report.paragraphs) or target.report.document)
    names = {str(n): compose_config("evaluate", [f"dataset={n}"]).dataset for n in cfg.feedback.test_datasets}
    _, keys = held_out_keys(held_out_cases(names, cfg.splits, cfg.seed, CONF_DIR.parent / "prepared"))
    by_stage: dict[str, list[dict]] = {}
    counts: dict[str, dict[str, int]] = {}
    for paragraph, card, decision in rows:
        for stage, made in training_rows([(paragraph, card, decision)], lang).items():
            tally = counts.setdefault(stage, {"exported": 0, "in_test": 0, "duplicate": 0})
            for row in made:
                if row_keys(row) & keys:
                    tally["in_test"] += 1
                    continue
                chunks = row.pop("evidence_chunks", None)
                provenance = {"review_run": target.key, "stage": stage, **({"chunks": chunks} if chunks else {})}
                provenance |= {k: v for k, v in asdict(decision).items() if k != "run_key"}
                row.update(case_id=row_id(stage, target.key, decision), split="train", provenance=provenance)
                by_stage.setdefault(stage, []).append(row)
    name = "review-" + hashlib.sha1(target.key.encode()).hexdigest()[:12]
    files = write_rows(by_stage, resolve_path(cfg.feedback.out_dir), name, counts)
    flat = {f"review/{k}": v for k, v in metrics.items() if isinstance(v, int | float)}
    for business, values in metrics["by_business"].items():
        flat |= {f"review/{business}/{k}": v for k, v in values.items() if isinstance(v, int | float)}
    flat |= {f"thresholds/{k}": v for k, v in thresholds.items() if isinstance(v, int | float)}
    flat |= {f"rows/{stage}": tally.get("exported", 0) for stage, tally in counts.items()}
    with tracked_run(cfg, "review", run_name=Path(target.report.document).name, tags={"run_key": target.key}) as track:
        track.log_metrics(flat)
        track.log_dict({"metrics": metrics, "thresholds": thresholds, "rows": counts, "files": files},
                       "feedback.json")
        track.log_table([asdict(d) for d in store.history(target.key)], "decisions.json")
    return {"metrics": metrics, "thresholds": thresholds, "rows": {s: t.get("exported", 0) for s, t in counts.items()},
            "counts": counts, "files": files, "run_key": target.key}
