"""Teachers label the training pool: `teacher=gold` reads the dataset's labels, `teacher=lm` runs the stage program
(optionally a compiled one from optimize.py) on an LM and caches every output with its provenance.

The LM teacher's cache is one JSONL file per (stage, teacher) under `cache_dir`, one record per input, keyed by the
sha256 of the stage and its inputs; records are appended as they come, so an interrupted labelling resumes where it
stopped and a rerun costs no LM call. The LM (and its llama.cpp server) is only built when something is missing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.data.jsonl import read_jsonl
from factlab.schema import to_jsonable
from factlab.train.tasks import Row

# Fields of an LM config that change how it runs, not what it answers: left out of the teacher's identity.
_RUNTIME_KEYS = frozenset({"port", "n_threads", "timeout_s", "num_retries", "start_timeout_s", "cache"})


@dataclass(frozen=True)
class TeacherLabel:
    """A teacher's answer for one row: the target (None when the teacher gave none) and where it came from."""

    target: object
    provenance: dict


def input_key(stage: str, inputs: dict) -> str:
    """sha256 of a stage's inputs (canonical JSON), the cache key of a teacher output.

    >>> input_key("judge", {"claim": "c", "evidence": ["e"]}) == input_key("judge", {"evidence": ["e"], "claim": "c"})
    True
    """
    return hashlib.sha256(json.dumps([stage, inputs], sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def agreement(targets: Sequence[object], golds: Sequence[object]) -> tuple[float | None, int]:
    """Share of rows where the teacher's target equals the gold, over rows that have both; and that count.

    >>> agreement(["a", "b", None, "c"], ["a", "c", "a", None])
    (0.5, 2)
    >>> agreement([None], ["a"])
    (None, 0)
    """
    pairs = [(t, g) for t, g in zip(targets, golds, strict=True) if t is not None and g is not None]
    return (sum(t == g for t, g in pairs) / len(pairs) if pairs else None), len(pairs)


@dataclass
class LabelledSplit:
    """The rows of one split with their teacher targets (None where the teacher gave none)."""

    rows: list[Row]
    targets: list

    def __iter__(self):  # rows, targets = split
        return iter((self.rows, self.targets))


def label_splits(job, stage_cfg: DictConfig, rows_of: Callable[[list[dict]], list[Row]],
                 target: Callable[[object], object], keep: Callable[[object], object], max_rows: dict,
                 agreement_name: str = "agreement_with_gold") -> dict[str, LabelledSplit]:
    """Every split's rows (a seeded sample of at most max_rows[split]) labelled by the job's teacher; logs per split
    the teacher's agreement with the gold, the rows without a target and the row count.

    Args:
        job: the TrainJob (splits, teacher, tracker, seed).
        stage_cfg: the stage the teacher runs.
        rows_of: cases -> rows (the task's view).
        target: the stage program's prediction -> a training target.
        keep: a teacher target -> the target kept for training, or None (e.g. a label outside the classes).
        max_rows: split -> row cap (None = all).
        agreement_name: the metric name of the agreement (`teacher/<split>_<name>`).
    """
    from factlab.data.splits import seeded_sample

    out = {}
    for split, cases in job.splits.items():
        rows = seeded_sample(rows_of(cases), max_rows.get(split), job.seed)
        targets = [keep(label.target) for label in job.teacher.label(stage_cfg, rows, target)]
        rate, n = agreement(targets, [row.gold or None for row in rows])
        job.tracker.log_metrics({f"teacher/{split}_{agreement_name}": rate, f"teacher/{split}_compared": n,
                                 f"teacher/{split}_no_target": sum(t is None for t in targets),
                                 f"data/{split}_rows": len(rows)})
        out[split] = LabelledSplit(rows, targets)
    return out


class GoldTeacher:
    """teacher=gold: the dataset's own labels are the targets."""

    name = "gold"

    def describe(self, stage_cfg: DictConfig | None = None) -> dict:
        """The teacher's identity (for the model card and the cache)."""
        return {"teacher": self.name}

    def label(self, stage_cfg: DictConfig, rows: Sequence[Row], target: Callable[[object], object]
              ) -> list[TeacherLabel]:
        """The gold of each row (None where the dataset has none)."""
        return [TeacherLabel(row.gold, {"teacher": self.name}) for row in rows]


class LMTeacher:
    """teacher=lm: run the stage program with an LM over the rows; outputs cached with provenance.

    Args:
        lm: the LM config (conf/lm/<name>.yaml, composed at `teacher.lm`); built only on a cache miss.
        compiled: optional compiled-program reference (optimize.py's JSON, run dir or MLflow run id) loaded into the
            stage program; resolved like every other program reference (factlab.tracking.refs).
        cache_dir: where the JSONL caches live; None = <cache root>/teacher.
        lm_cache_dir: DSPy's disk cache for the LM calls (None keeps DSPy's default).
        max_items: label at most this many rows (the first ones; None = all), a guard on LM time.
    """

    name = "lm"

    def __init__(self, lm: DictConfig | dict, compiled: str | None, cache_dir: str | None = None,
                 lm_cache_dir: str | None = None, max_items: int | None = None) -> None:
        from factlab.runtime import cache_root

        self.lm_cfg = lm if isinstance(lm, DictConfig) else OmegaConf.create(lm)
        self.compiled = compiled
        self.cache_dir = Path(cache_dir) if cache_dir is not None else cache_root() / "teacher"
        self.lm_cache_dir = lm_cache_dir
        self.max_items = max_items

    def describe(self, stage_cfg: DictConfig | None = None) -> dict:
        """The teacher's identity: LM config (without runtime knobs), program config and, per stage, the sha256 of
        the compiled program's content (a program rewritten in place is another teacher)."""
        lm = {k: v for k, v in OmegaConf.to_container(self.lm_cfg, resolve=True).items() if k not in _RUNTIME_KEYS}
        out = {"teacher": self.name, "lm": lm, "compiled": self.compiled}
        if stage_cfg is not None:
            out["program"] = OmegaConf.to_container(stage_cfg.program, resolve=True)
            out["compiled_sha256"] = _compiled_sha256(self.compiled, stage_cfg.name) if self.compiled else None
        return out

    def cache_path(self, stage_cfg: DictConfig) -> Path:
        identity = json.dumps(self.describe(stage_cfg), sort_keys=True, default=str)
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        return self.cache_dir / stage_cfg.name / f"{self.lm_cfg.name}-{digest}.jsonl"

    def label(self, stage_cfg: DictConfig, rows: Sequence[Row], target: Callable[[object], object]
              ) -> list[TeacherLabel]:
        """Label the rows (cached, resumable); rows past `max_items` and failed calls get target None."""
        path = self.cache_path(stage_cfg)
        cache = read_cache(path)
        todo = rows if self.max_items is None else rows[: self.max_items]
        missing = {}
        for row in todo:
            key = input_key(stage_cfg.name, row.inputs)
            if key not in cache:
                missing.setdefault(key, row)
        if missing:
            self._run(stage_cfg, list(missing.items()), target, path, cache)
        provenance = {"teacher": self.name, "lm": self.lm_cfg.name, "cache": str(path)}
        labels = []
        for index, row in enumerate(rows):
            record = cache.get(input_key(stage_cfg.name, row.inputs)) if index < len(todo) else None
            labels.append(TeacherLabel(record["target"] if record else None,
                                       {**provenance, "error": record.get("error") if record else "not labelled"}))
        return labels

    def _run(self, stage_cfg: DictConfig, items: list[tuple[str, Row]], target: Callable[[object], object],
             path: Path, cache: dict[str, dict]) -> None:
        from hydra.utils import instantiate
        from tqdm import tqdm

        from factlab.models.errors import call_safely
        from factlab.runtime import configure_lm_cache
        from factlab.stages.build import build_program

        configure_lm_cache(self.lm_cache_dir)
        program_cfg = OmegaConf.merge(stage_cfg, {"backend": "program"})
        program = build_program(program_cfg, self.compiled)
        handle = instantiate(self.lm_cfg)
        identity = {"lm": handle.info, "program": stage_cfg.program.get("_target_"), "compiled": self.compiled}
        path.parent.mkdir(parents=True, exist_ok=True)
        torn = path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n")
        with path.open("a", encoding="utf-8") as out, handle.context():
            if torn:  # an interrupted write left half a line: start ours on a fresh one
                out.write("\n")
            for key, row in tqdm(items, desc=f"teacher {self.lm_cfg.name} on {stage_cfg.name}", unit="item"):
                start = time.perf_counter()
                pred, error = call_safely(stage_cfg.name, program, handle.breaker, **row.inputs)
                value = None if error else target(pred)
                record = {"key": key, "stage": stage_cfg.name, "inputs": row.inputs, "target": value,
                          "output": None if error else to_jsonable(dict(pred.items())),
                          "error": str(error) if error else (None if value is not None else "no usable target"),
                          "gold": row.gold, "teacher": identity, "seconds": round(time.perf_counter() - start, 3),
                          "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
                out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
                out.flush()  # one record per line as it comes: an interrupted run resumes here
                cache[key] = record


def read_cache(path: Path) -> dict[str, dict]:
    """The records of a teacher cache by key; a torn last line (interrupted write) is skipped."""
    if not path.exists():
        return {}
    return {record["key"]: record for record in read_jsonl(path, skip_torn=True)}


def _compiled_sha256(ref: str, stage: str) -> str:
    from factlab.tracking.refs import resolve_compiled

    return hashlib.sha256(resolve_compiled(ref, stage).read_bytes()).hexdigest()
