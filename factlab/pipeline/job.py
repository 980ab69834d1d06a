"""The verify job: check one document against a folder of sources and write cards.json, report.html and run.json.

`run(cfg)` is what verify.py calls; tests call it directly with a composed config.
"""

from __future__ import annotations

import time
from pathlib import Path

from omegaconf import DictConfig

from factlab.atomic import write_json
from factlab.cards.model import write_cards_json
from factlab.pipeline.build import build_pipeline
from factlab.report.html import write_report_html
from factlab.runtime import configure_lm_cache, prepare_offline_env
from factlab.textio import InputError, read_text_file
from factlab.tracking.run import tracked_run


def run(cfg: DictConfig) -> dict:
    """Check `cfg.input` against `cfg.sources`; write cards.json, report.html and run.json to `cfg.output_dir`."""
    prepare_offline_env()
    configure_lm_cache(cfg.lm_cache_dir)
    document = read_text_file(cfg.input)
    if not Path(cfg.sources).exists():
        raise InputError(f"sources folder not found: {cfg.sources} (set sources=<folder>)")
    started = time.perf_counter()
    with tracked_run(cfg, "verify", run_name=Path(cfg.input).name) as track:
        pipeline, retriever = build_pipeline(cfg, store=track.tracking_uri)
        for issue in retriever.issues:
            print(f"warning: source skipped: {issue.path}: {issue.reason}")
        trace = pipeline.run(document, name=str(cfg.input))
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_cards_json(trace.report, out / "cards.json")
        write_report_html(trace.report, out / "report.html")
        summary = {"output_dir": str(out), "seconds": round(time.perf_counter() - started, 2),
                   "summary": trace.report.summary, "costs": pipeline.meter.costs(),
                   "claim_cache": pipeline.cache.hits if pipeline.cache else None,
                   "ingest_issues": [f"{i.path}: {i.reason}" for i in retriever.issues]}
        write_json(out / "run.json", summary, indent=2)
        track.log_metrics({f"claims/{k}": v for k, v in trace.report.summary["labels"].items()})
        track.log_artifact(out)
    return summary
