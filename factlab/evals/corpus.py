"""The folder the retriever indexes for an evaluation: the dataset's own corpus folder when its cases name corpus
files (bundled: datasets/bundled/corpus), else their inline `sources` written once as .jsonl files into a folder
keyed by their content (so the index cache is reused across runs)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from factlab.atomic import write_text
from factlab.data.loaders.build import resolve_path
from factlab.data.registry import content_hash


def corpus_folder(cases: Sequence[dict], dataset_cfg: DictConfig, cache_root: Path) -> Path:
    """The sources folder for `cases`.

    Args:
        cases: the evaluated cases (each with `sources`; bundled ones also with `corpus`).
        dataset_cfg: the `dataset` config node (its `data_root` locates corpus files).
        cache_root: where inline sources are written (`<cache_root>/<content hash>/`).

    Raises:
        ValueError: cases without any source (nothing to retrieve from).
    """
    named = {str(Path(case["corpus"]).parent) for case in cases if "corpus" in case}
    if named and len(named) == 1 and all("corpus" in case for case in cases) and "data_root" in dataset_cfg:
        folder = resolve_path(dataset_cfg.data_root) / named.pop()
        if folder.is_dir():
            return folder
    lists: dict[int, list[dict]] = {}
    for case in cases:
        if case.get("sources"):
            lists.setdefault(id(case["sources"]), case["sources"])
    if not lists:
        raise ValueError(f"dataset {dataset_cfg.name!r}: the evaluated cases carry no sources to retrieve from; "
                         "set sources=<folder of source files>")
    records = {r["source_id"]: r for sources in lists.values() for r in sources}
    key = content_hash([r for _, r in sorted(records.items())])[:16]
    folder = cache_root / key
    if not (folder / "corpus.jsonl").is_file():  # content-addressed: a concurrent writer writes the same bytes
        write_text(folder / "corpus.jsonl",
                   "".join(json.dumps(r, ensure_ascii=False) + "\n" for _, r in sorted(records.items())))
    return folder
