"""review.py: serve the review app over one checked report, or turn its decisions into feedback (training rows for
the stages they concern, business thresholds refitted with a held-back part, adoption and risk coverage in MLflow)."""

from __future__ import annotations

import hashlib
import logging
import sys
from dataclasses import asdict
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.review.runs import ReviewTarget, resolve_run
from factlab.review.store import DecisionStore

logger = logging.getLogger(__name__)


def target_and_store(cfg: DictConfig) -> tuple[ReviewTarget, DecisionStore]:
    from factlab.tracking.store import tracking_uri

    return (resolve_run(str(cfg.run), tracking_uri(cfg.mlflow_uri), cfg.download_dir),
            DecisionStore(cfg.db, timeout_s=float(cfg.db_timeout_s)))


def run(cfg: DictConfig) -> dict:
    """`cfg.action`: serve (blocks until stopped) or feedback (returns its counts and metrics)."""
    target, store = target_and_store(cfg)
    if cfg.action == "serve":
        return serve(cfg, target, store)
    if cfg.action == "feedback":
        return feedback(cfg, target, store)
    raise ValueError(f"action={cfg.action!r}: expected serve or feedback (conf/review.yaml)")


def launch(cfg: DictConfig, target: ReviewTarget, store: DecisionStore):
    """The guarded app for `cfg`, its uvicorn config and its address; prints the launch URL (with the token) once.

    Raises:
        ReviewAccessError: `host` is not loopback and `allow_remote` is not set, or the token is too short.
    """
    from factlab.review.app import build_app, server_config
    from factlab.review.security import Access, Limits, ReviewAccessError, host_name, is_loopback

    host = str(cfg.host)
    remote = not is_loopback(host)
    if remote and not cfg.allow_remote:
        raise ReviewAccessError(f"host={host}: not a loopback address, so the report (its sources, local paths) and "
                                "the decisions would be open to other machines; use host=127.0.0.1, or set "
                                "allow_remote=true if that is meant (conf/review.yaml)")
    if cfg.token is not None and not str(OmegaConf.to_container(cfg, resolve=False)["token"]).startswith("${"):
        logger.warning("token given in the config or on the command line: Hydra keeps it in the run's .hydra/ "
                       "folder; set FACTLAB_REVIEW_TOKEN instead")
    access = Access(**({"token": str(cfg.token)} if cfg.token is not None else {}),
                    hosts=(host, *map(str, cfg.allowed_hosts)))
    app = build_app(target, store, cfg.reviewer, access, Limits(**cfg.limits))
    url = f"http://{host_name(host)}:{int(cfg.port)}/"
    if remote:
        warning = (f"WARNING: the review app listens on {host}:{cfg.port}, reachable from other machines "
                   "(allow_remote=true); the token is still required, but it travels unencrypted (plain HTTP); a "
                   "browser elsewhere must use a Host name listed in allowed_hosts")
        logger.warning(warning)
        print(f"\n{'!' * 100}\n{warning}\n{'!' * 100}\n", file=sys.stderr)
    print(f"reviewing {target.key} ({len(target.versions())} cards; decisions in {store.path}) at "
          f"{url}?token={access.token}")
    return app, server_config(app, host, int(cfg.port)), url


def serve(cfg: DictConfig, target: ReviewTarget, store: DecisionStore) -> dict:
    """Run the review app until stopped (see `launch`); returns its address (without the token) and the run key."""
    import uvicorn

    _, config, url = launch(cfg, target, store)
    uvicorn.Server(config).run()
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
