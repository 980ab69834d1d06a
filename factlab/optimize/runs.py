"""Run-specific directories: one per resolved config, so the same command resumes and another never does.

The directory name carries a hash of the resolved config (minus `fingerprint_ignore` keys such as tracking), of
the dataset's content and, for optimize.py, of what the code makes of them: the examples of every split (inputs and
gold, as the stage's `to_examples` builds them) and the source of the stage's module (its signature, program and
metric), so a run is not resumed after a change that alters what it optimizes or how it scores. It holds
`fingerprint.json` (what was hashed), GEPA's checkpoint, the compiled program and `mlflow_runs.json` (tracking
URI -> MLflow run id), so a resumed run logs into the MLflow run it started.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from factlab.atomic import read_json, write_json

FINGERPRINT_FILE = "fingerprint.json"
MLFLOW_RUNS_FILE = "mlflow_runs.json"


class RunDirError(RuntimeError):
    """A run dir holds another config's state, or resuming was refused."""


def drop_keys(config: Mapping[str, Any], dotted_keys: Iterable[str]) -> dict[str, Any]:
    """A deep copy of `config` without the dotted keys (missing keys are ignored).

    >>> drop_keys({"a": {"b": 1, "c": 2}, "d": 3}, ["a.b", "d", "x.y"])
    {'a': {'c': 2}}
    """
    out = copy.deepcopy(dict(config))
    for key in dotted_keys:
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            node.pop(leaf, None)
    return out


def fingerprint(config: Mapping[str, Any], ignore: Iterable[str], data_hash: str,
                inputs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What identifies a run: the config without the ignored keys, the dataset's content hash and `inputs` (more
    hashes, e.g. `examples_hash` and `source_hash`)."""
    print_ = {"config": drop_keys(config, ignore), "dataset_content_hash": data_hash}
    return {**print_, "inputs": dict(inputs)} if inputs else print_


def examples_hash(splits: Mapping[str, Iterable[Any]]) -> str:
    """sha256 of every split's examples (DSPy examples or dicts), in order: what an optimizer compiles and scores on.

    >>> import dspy
    >>> a = {"train": [dspy.Example(paragraph="A rose.", claims=["A rose."]).with_inputs("paragraph")]}
    >>> b = {"train": [dspy.Example(paragraph="A rose. ", claims=["A rose."]).with_inputs("paragraph")]}
    >>> examples_hash(a) == examples_hash(a) != examples_hash(b)
    True
    """
    return config_hash({name: [dict(e.toDict()) if hasattr(e, "toDict") else dict(e) for e in examples]
                        for name, examples in splits.items()}, length=64)


def source_hash(name: str) -> str | None:
    """sha256 of a module's source file, or, for a package, over every `.py` file in it (its path inside the package
    and its digest: what a job that runs the whole package, the loop's evaluations, was computed by); None when
    there is no source (not found, or built in).

    >>> len(source_hash("factlab.optimize.runs")), source_hash("factlab.no_such_module")
    (64, None)
    >>> source_hash("factlab.loop") == source_hash("factlab.loop") != source_hash("factlab.optimize")
    True
    """
    import importlib.util

    from factlab.stages.build import file_digest

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is not None and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
        return config_hash({f.relative_to(root).as_posix(): file_digest(f) for f in sorted(root.rglob("*.py"))},
                           length=64)
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return None
    return file_digest(spec.origin)


def config_hash(print_: Mapping[str, Any], length: int = 12) -> str:
    """Short sha256 of a fingerprint's canonical JSON.

    >>> config_hash({"a": 1}) == config_hash({"a": 1}) != config_hash({"a": 2})
    True
    """
    text = json.dumps(print_, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def prepare_run_dir(runs_dir: str | Path, stage: str, optimizer: str, print_: Mapping[str, Any],
                    resume: bool) -> tuple[Path, bool]:
    """Create (or reopen) `<runs_dir>/<stage>/<optimizer>-<hash>` and check it belongs to this fingerprint.

    Returns:
        (the run dir, whether it already existed, i.e. this run resumes).

    Raises:
        RunDirError: the dir holds a different fingerprint, or it exists and `resume` is false.
    """
    run_dir = Path(runs_dir).resolve() / stage / f"{optimizer}-{config_hash(print_)}"
    stamp = run_dir / FINGERPRINT_FILE
    wanted = json.loads(json.dumps(print_, sort_keys=True, ensure_ascii=False, default=str))
    found = read_json(stamp, None, "run fingerprint")  # a torn stamp (a killed write) is set aside and rewritten
    if found is not None and found != wanted:
        raise RunDirError(f"{run_dir} holds the state of another config ({stamp}); delete the folder or "
                          "change runs_dir")
    # the dir name is the config hash, so a dir whose stamp was torn still holds this config's state
    existing = found is not None or (run_dir.is_dir() and any(
        p.name != FINGERPRINT_FILE and not p.name.endswith(".torn") for p in run_dir.iterdir()))
    if existing and not resume:
        raise RunDirError(f"{run_dir} exists and resume=false; delete it to start over, or pass resume=true")
    if found is None:
        write_json(stamp, wanted, indent=2, sort_keys=True)
    return run_dir, existing


def claim_state_dir(state_dir: str | Path, print_: Mapping[str, Any]) -> Path:
    """Stamp an optimizer state dir (e.g. an explicit GEPA log_dir) with the fingerprint, or refuse a foreign one.

    GEPA resumes from any `gepa_state.bin` it finds in its log_dir; this makes sure the state there is ours.

    Raises:
        RunDirError: the dir was stamped by a different config, or holds unstamped state.
    """
    state_dir = Path(state_dir).resolve()
    stamp = state_dir / FINGERPRINT_FILE
    wanted = json.loads(json.dumps(print_, sort_keys=True, ensure_ascii=False, default=str))
    found = read_json(stamp, None, "optimizer state fingerprint")
    if found is not None:
        if found != wanted:
            raise RunDirError(f"optimizer state dir {state_dir} belongs to another config ({stamp}); resuming it "
                              "would continue that run. Delete the folder or set optimizer.log_dir=null")
        return state_dir
    if state_dir.exists() and any(state_dir.iterdir()):
        raise RunDirError(f"optimizer state dir {state_dir} holds state of unknown origin; GEPA would silently resume "
                          "it. Delete the folder or set optimizer.log_dir=null")
    write_json(stamp, wanted, indent=2, sort_keys=True)
    return state_dir


def recorded_mlflow_run(run_dir: Path, tracking_uri: str | None) -> str | None:
    """The MLflow run id this run dir started on `tracking_uri`, if any."""
    if tracking_uri is None:
        return None
    return read_json(run_dir / MLFLOW_RUNS_FILE, {}, "MLflow run record").get(tracking_uri)


def record_mlflow_run(run_dir: Path, tracking_uri: str | None, run_id: str | None) -> None:
    """Remember the MLflow run id of this run dir on `tracking_uri` (no-op without tracking)."""
    if tracking_uri is None or run_id is None:
        return
    path = run_dir / MLFLOW_RUNS_FILE
    runs = read_json(path, {}, "MLflow run record")
    runs[tracking_uri] = run_id
    write_json(path, runs, indent=2)
