"""The nearline checker: many documents, one JSONL line of results per document, on Ray.

    python verify.py checker=nearline input=docs/ sources=corpus/ output_dir=out/       # a folder of .md / .txt
    python verify.py checker=nearline input=docs.jsonl sources=corpus/ checker.ray.address=auto   # {"id", "text"}

Each Ray actor builds the inner checker (`checker.inner`: fast by default) once and holds its models; the driver
keeps at most `num_workers x max_in_flight` documents in flight (bounded memory: the input is read lazily), writes
each finished document as one line of `<output_dir>/results.jsonl` and fsyncs it. A rerun with the same output_dir
skips every document already written; a torn last line (the process was killed mid-write) is cut off and that
document redone. A document that fails becomes a line with `error`, never a failed batch. The same code runs on a
local Ray runtime (default) and on a cluster (`checker.ray.address`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from factlab.textio import InputError

logger = logging.getLogger(__name__)
RESULTS = "results.jsonl"
DOCUMENT_SUFFIXES = (".md", ".txt")
# Environment a Ray worker needs to find what the driver finds (caches, the MLflow store, offline switches).
_ENV_PREFIXES = ("FACTLAB_", "MLFLOW_", "HF_", "TRANSFORMERS_", "DSPY_", "LITELLM_", "TOKENIZERS_")


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str


def read_documents(path: str | Path, max_chars: int | None = None) -> Iterator[Document]:
    """The documents of a folder (its .md / .txt files, sorted; the id is the relative path) or of a JSONL file (one
    `{"id": ..., "text": ...}` object per line), read lazily. A bad line or file is an InputError naming it."""
    from factlab.textio import read_text_file

    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in DOCUMENT_SUFFIXES and p.is_file())
        if not files:
            raise InputError(f"{path}: no .md or .txt documents in this folder")
        for file in files:
            yield Document(str(file.relative_to(path)), read_text_file(file, max_chars=max_chars))
        return
    if not path.is_file():
        raise InputError(f"input not found: {path} (a folder of .md / .txt documents or a .jsonl file)")
    seen: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            for name in ("id", "text"):
                if not isinstance(row, dict) or not isinstance(row.get(name), str) or not row[name].strip():
                    raise InputError(f"{path}:{number}: field {name!r} must be a non-empty string")
            if row["id"] in seen:
                raise InputError(f"{path}:{number}: field 'id' {row['id']!r} repeats an earlier line")
            if max_chars is not None and len(row["text"]) > max_chars:
                raise InputError(f"{path}:{number}: field 'text' has {len(row['text'])} characters, more than "
                                 f"max_document_chars={max_chars}")
            seen.add(row["id"])
            yield Document(row["id"], row["text"])


def finished(results: Path) -> set[str]:
    """The ids already in a results file; a torn last line (no newline, or not JSON) is cut off the file."""
    if not results.exists():
        return set()
    data = results.read_bytes()
    keep = data.rfind(b"\n") + 1  # everything after the last newline is a torn write
    ids = set()
    good = 0
    for raw in data[:keep].splitlines(keepends=True):
        try:
            ids.add(json.loads(raw)["id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            logger.warning("%s: dropping an unreadable line and everything after it (redone)", results)
            break
        good += len(raw)
    if good < len(data):
        with results.open("r+b") as fh:
            fh.truncate(good)
    return ids


class CheckerWorker:
    """What each Ray actor holds: the inner checker, built once from the config."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        from factlab.checkers.build import build_checker
        from factlab.runtime import configure_lm_cache, prepare_offline_env

        prepare_offline_env()
        node = OmegaConf.create(cfg)
        configure_lm_cache(node.lm_cache_dir)
        node.checker = node.checker.inner
        self.checker = build_checker(node)

    def check(self, doc_id: str, text: str) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            report = self.checker.run(text, name=doc_id).report
        except Exception as exc:  # this document fails, the batch goes on
            return {"id": doc_id, "error": f"{type(exc).__name__}: {exc}",
                    "seconds": round(time.perf_counter() - started, 3)}
        return {"id": doc_id, "checker": self.checker.name, "seconds": round(time.perf_counter() - started, 3),
                "summary": report.summary, "report": report.to_dict()}


def _worker_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}


def run(cfg: DictConfig, worker: type = CheckerWorker) -> dict[str, Any]:
    """Check every document of `cfg.input` against `cfg.sources`; append results to `<output_dir>/results.jsonl`.

    `worker` is the actor class (tests pass one holding a fake checker); with the default the sources' index is built
    once here, before the workers read it."""
    import ray
    from hydra.utils import instantiate

    from factlab.atomic import write_json

    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = out / RESULTS
    done = finished(results)
    # one validating pass first (texts read and dropped): a bad line or file stops the run before any work
    total = sum(1 for _ in read_documents(cfg.input, cfg.max_document_chars))
    documents = read_documents(cfg.input, cfg.max_document_chars)
    settings = cfg.checker.ray
    if worker is CheckerWorker:
        instantiate(cfg.retriever)  # the index once, before the workers read it
    started = time.perf_counter()
    ray.init(address=settings.address, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False,
             runtime_env={"env_vars": _worker_env()}, **({} if settings.address else {"num_cpus": os.cpu_count()}))
    try:
        remote = ray.remote(num_cpus=settings.num_cpus_per_worker)(worker)
        plain = OmegaConf.to_container(cfg, resolve=True)
        actors = [remote.remote(plain) for _ in range(int(settings.num_workers))]
        stats = _drive(actors, documents, done, results, total, int(settings.max_in_flight), cfg.progress)
    finally:
        ray.shutdown()
    wall = time.perf_counter() - started
    summary = {"output_dir": str(out), "results": str(results), "documents": total, "skipped_done": len(done),
               **stats, "seconds": round(wall, 2),
               "documents_per_min": round(60 * stats["checked"] / wall, 2) if wall else 0.0,
               "claims_per_s": round(stats["claims"] / wall, 3) if wall else 0.0, "checker": "nearline",
               "inner": cfg.checker.inner.name, "summary": {"claims": stats["claims"], "not_checkworthy": 0,
                                                           "errors": stats["failed"], "labels": stats["labels"]}}
    write_json(out / "run.json", summary, indent=2)
    return summary


def _drive(actors: list, documents: Iterator[Document], done: set[str], results: Path, total: int,
           max_in_flight: int, progress: bool) -> dict[str, Any]:
    """Keep every actor busy with at most `max_in_flight` documents each; write each result as it lands."""
    import ray

    from factlab.schema import LABELS

    stats: dict[str, Any] = {"checked": 0, "failed": 0, "claims": 0, "labels": dict.fromkeys(LABELS, 0)}
    bar = tqdm(total=total, initial=len(done), desc="documents", unit="doc", disable=not progress)
    pending: dict[Any, str] = {}
    todo = (d for d in documents if d.doc_id not in done)
    turn = 0

    def submit() -> bool:
        nonlocal turn
        doc = next(todo, None)
        if doc is None:
            return False
        actor = actors[turn % len(actors)]
        turn += 1
        pending[actor.check.remote(doc.doc_id, doc.text)] = doc.doc_id
        return True

    while len(pending) < max_in_flight * len(actors) and submit():
        pass
    with results.open("a", encoding="utf-8") as fh:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            doc_id = pending.pop(ready[0])
            try:
                row = ray.get(ready[0])
            except Exception as exc:  # the actor died or the task failed: a line saying so, then on
                row = {"id": doc_id, "error": f"{type(exc).__name__}: {exc}"}
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            if "error" in row:
                stats["failed"] += 1
            else:
                stats["checked"] += 1
                stats["claims"] += int(row["summary"]["claims"])
                for label, n in row["summary"]["labels"].items():
                    stats["labels"][label] = stats["labels"].get(label, 0) + int(n)
            bar.update(1)
            bar.set_postfix(claims=stats["claims"], failed=stats["failed"])
            submit()
    bar.close()
    return stats
