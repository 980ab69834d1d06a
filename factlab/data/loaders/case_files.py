"""Our own case files (schema: datasets/README.md), found by glob under a root: the bundled dataset."""

from __future__ import annotations

from collections.abc import Sequence

from factlab.data.cases import load_cases
from factlab.data.loaders.build import resolve_files


def load(*, name: str, data_root: str, files: Sequence[str], max_rows: int | None = None) -> list[dict]:
    """Load and validate every case file matched by `files` under `data_root`.

    Args:
        name: dataset name (the config file is conf/dataset/<name>.yaml).
        data_root: folder of the case files; relative paths resolve against the repo root.
        files: file paths or glob patterns, e.g. ``cases_*.jsonl``.
        max_rows: read at most this many cases per file.

    Returns:
        The cases, `sources` resolved.
    """
    return load_cases(resolve_files(name, data_root, files), max_rows=max_rows)
