"""The one reader of the hand-written JSONL gold files (datasets/layers/*.jsonl): every line parsed and validated,
ids unique, and a bad line named by file, line and field (CaseError)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from factlab.data.errors import CaseError


def read_jsonl(path: Path | str, validate: Callable[[object, str], dict], id_field: str) -> list[dict]:
    """The objects of a JSONL file, each `validate(value, where)`d (where = "file:line"), `id_field` unique.

    Raises:
        CaseError: a line that is not JSON, fails `validate`, or repeats an id (naming file, line and field).
    """
    path = Path(path)
    rows, ids = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseError(where, "(line)", f"not JSON ({exc.msg} at column {exc.colno})") from None
        row = validate(value, where)
        if row[id_field] in ids:
            raise CaseError(where, id_field, f"expected unique ids, got {row[id_field]!r} twice")
        ids.add(row[id_field])
        rows.append(row)
    return rows
