"""The verify job: check one document against a folder of sources with the configured checker (`checker=fast |
professional | funnel`) and write cards.json, report.html and run.json; `checker=nearline` checks a folder or JSONL of
documents (factlab.checkers.nearline).

`run(cfg)` is what verify.py calls; tests call it directly with a composed config. `failure(summary, share)` says
whether the run could not check what it was asked to (verify.py then exits non-zero).
"""

from __future__ import annotations

import time
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig

from factlab.atomic import write_json
from factlab.cards.build import build_report
from factlab.cards.html import write_report_html
from factlab.cards.model import write_cards_json
from factlab.checkers.build import build_checker, checker_name
from factlab.matching.segment import checkable_sentences
from factlab.runtime import configure_lm_cache, prepare_offline_env
from factlab.textio import InputError, read_text_file
from factlab.tracking.run import tracked_run


def run(cfg: DictConfig) -> dict:
    """Check `cfg.input` against `cfg.sources`; write cards.json, report.html and run.json to `cfg.output_dir`.

    A document with no sentence to check (headings only) gets an empty report without starting any model.
    """
    prepare_offline_env()
    configure_lm_cache(cfg.lm_cache_dir)
    if checker_name(cfg) == "nearline":
        from factlab.checkers.nearline import run as run_nearline

        return run_nearline(cfg)
    document = read_text_file(cfg.input, max_chars=cfg.max_document_chars)
    if "sources" in cfg.retriever and not Path(str(cfg.sources)).exists():  # the web searchers read no folder
        raise InputError(f"sources folder not found: {cfg.sources} (set sources=<folder>, or search=searxng|brave)")
    started = time.perf_counter()
    out = Path(cfg.output_dir)
    with tracked_run(cfg, "verify", run_name=Path(cfg.input).name) as track:
        if not checkable_sentences(document):
            report = build_report(document=str(cfg.input), business=cfg.business.name, paragraphs=[])
            costs, cache_hits, issues, load_s, check_s = {}, None, [], 0.0, 0.0
        else:
            loading = time.perf_counter()
            checker = build_checker(cfg)
            load_s = time.perf_counter() - loading
            for issue in checker.retriever.issues:
                print(f"warning: source skipped: {issue}")
            checking = time.perf_counter()
            report = checker.run(document, name=str(cfg.input)).report
            check_s = time.perf_counter() - checking
            costs, issues = checker.meter.costs(), [str(i) for i in checker.retriever.issues]
            cache_hits = checker.cache.hits if checker.cache else None
        write_cards_json(report, out / "cards.json")
        write_report_html(report, out / "report.html")
        summary = {"output_dir": str(out), "seconds": round(time.perf_counter() - started, 2),
                   "checker": checker_name(cfg), "load_s": round(load_s, 2), "check_s": round(check_s, 2),
                   "summary": report.summary, "costs": costs, "claim_cache": cache_hits, "ingest_issues": issues}
        if cfg.notes is not None:  # the cards as knowledge notes, never evidence until a person accepts them
            summary["notes"] = instantiate(cfg.notes)(report, run=out.name, cards=out / "cards.json").summary()
            print(f"knowledge notes: {summary['notes']}")
        write_json(out / "run.json", summary, indent=2)
        track.log_metrics({f"claims/{k}": v for k, v in report.summary["labels"].items()}
                          | {"claims/errors": report.summary["errors"]})
        track.log_artifact(out)
    return summary


def failure(summary: dict, max_error_share: float) -> str | None:
    """A one-line reason when the run could not check what it was asked to: every check-worthy claim failed, or
    more than `max_error_share` of them did; None when it checked enough.

    >>> failure({"summary": {"claims": 4, "not_checkworthy": 0, "errors": 4}}, 0.5)
    'all 4 check-worthy claims failed (errors: see cards.json); nothing was checked'
    >>> failure({"summary": {"claims": 4, "not_checkworthy": 1, "errors": 1}}, 0.5) is None
    True
    """
    counts = summary["summary"]
    checked = counts["claims"] - counts["not_checkworthy"]
    errors = counts["errors"]
    if checked and errors == checked:
        return f"all {checked} check-worthy claims failed (errors: see cards.json); nothing was checked"
    if checked and errors / checked > max_error_share:
        return (f"{errors} of {checked} check-worthy claims failed, more than max_error_share={max_error_share:g} "
                "(errors: see cards.json)")
    return None
