"""Load any dataset from its config (conf/dataset/<name>.yaml) into a `Dataset` with a content hash.

The hash is sha256 over the canonical JSON of the cases (sorted keys, in order), so a run can log exactly which
data it saw (MLflow param `dataset/content_hash`); a corpus shared by many cases is hashed once.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hydra.utils import get_method, instantiate
from omegaconf import DictConfig, OmegaConf

from factlab.data.cases import canonical_json, load_cases
from factlab.data.errors import DatasetConfigError
from factlab.data.loaders.build import config_file, resolve_path


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset: its config name, its validated cases and their content hash."""

    name: str
    cases: list[dict]
    content_hash: str


def load_dataset(cfg: DictConfig | dict) -> Dataset:
    """Instantiate the dataset config's `_target_` loader and hash what it returns.

    Args:
        cfg: a `dataset` config node: `_target_` (a loader function), `name`, and the loader's arguments.

    Returns:
        The Dataset.

    Raises:
        DatasetConfigError: a config without `_target_` / `name`, or a loader that returns no cases.
        CaseError: a malformed row, naming file, line and field.
    """
    cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
    for key in ("_target_", "name"):
        if key not in cfg:
            raise DatasetConfigError(f"dataset config: expected key {key!r}, got keys {', '.join(cfg)}")
    # Call the loader ourselves (not through instantiate) so its CaseError reaches the user unwrapped.
    loader = get_method(cfg._target_)
    own = [key for key in cfg if key not in ("_target_", "extra")]  # `extra` is ours, not the loader's
    resolved = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))  # `${splits}` etc. need the root
    arguments = instantiate(OmegaConf.masked_copy(resolved, own), _convert_="all")
    cases = loader(**arguments)
    if not cases:
        raise DatasetConfigError(f"{config_file(cfg.name)}: expected at least one case, got none")
    if "extra" in cfg and cfg.extra:
        cases = cases + load_extra(cfg.extra)
    return Dataset(name=cfg.name, cases=cases, content_hash=content_hash(cases))


def load_extra(name: str) -> list[dict]:
    """The rows `dataset.extra=<name>` adds: every case file under datasets/<name>/<stage>/ (a path is taken as
    given), e.g. the bad cases scripts/reflow.py exported. They always go to train (`split` set), so they never move
    a dataset's own cases between splits nor reach val / test.

    Raises:
        DatasetConfigError: no case file there.
    """
    folder = resolve_path(Path("datasets") / str(name))
    paths = sorted(folder.glob("*/*.jsonl"))
    if not paths:
        raise DatasetConfigError(f"dataset.extra={name}: no case files at {folder}/<stage>/*.jsonl; export some "
                                 "with `python scripts/reflow.py run=<evaluate run id>`, or drop dataset.extra")
    return [{**case, "split": "train"} for case in load_cases(paths)]


def content_hash(cases: Iterable[dict]) -> str:
    """sha256 hex digest of the cases' canonical JSON; each distinct `sources` list is hashed once.

    >>> content_hash([{"case_id": "a"}]) == content_hash([{"case_id": "a"}]) != content_hash([{"case_id": "b"}])
    True
    """
    digest = hashlib.sha256()
    source_digests: dict[int, str] = {}  # corpus lists are shared by the cases of one file
    for case in cases:
        row = dict(case)
        if "sources" in row:
            sources = row["sources"]
            if id(sources) not in source_digests:
                source_digests[id(sources)] = hashlib.sha256(canonical_json(sources).encode()).hexdigest()
            row["sources"] = source_digests[id(sources)]
        digest.update(canonical_json(row).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def summarise(cases: Iterable[dict]) -> dict[str, dict[str, int]]:
    """Counts of cases per lang / vertical / error_type / split, and of claims per label / relation.

    >>> summarise([{"lang": "en", "claims": [{"label": "correct"}, {"relation": "support"}]}])["label"]
    {'correct': 1, '(none)': 1}
    """
    counts = {key: Counter() for key in ("lang", "vertical", "error_type", "split", "label", "relation")}
    total_cases = total_claims = 0
    for case in cases:
        total_cases += 1
        for key in ("lang", "vertical", "error_type", "split"):
            counts[key][case.get(key, "(none)")] += 1
        for claim in case.get("claims", []):
            total_claims += 1
            for key in ("label", "relation"):
                counts[key][claim.get(key, "(none)")] += 1
    summary = {key: dict(counter.most_common()) for key, counter in counts.items()}
    summary["total"] = {"cases": total_cases, "claims": total_claims}
    return summary
