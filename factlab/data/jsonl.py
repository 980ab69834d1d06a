"""The one JSONL reader: hand-written gold files (datasets/layers/*.jsonl), case and corpus files (through
`factlab.data.rows`), and the JSONL outputs of our own jobs (predictions, items, caches, curves), read back.

Every non-blank line is parsed; a line that is not UTF-8 or not JSON raises CaseError naming the file and the line
(`file:line` unless the caller names its lines otherwise), or is skipped where the file is a resumable output whose
writer may have been killed mid-line (`skip_torn`). `read_jsonl` also validates each value and keeps ids unique.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from factlab.data.errors import CaseError


def colon_location(source: str, number: int) -> str:
    """Where a line is, as `file:line` (the default of every reader here).

    >>> colon_location("gold.jsonl", 3)
    'gold.jsonl:3'
    """
    return f"{source}:{number}"


def jsonl_values(lines: Iterable[bytes | str], source: str, *, skip_torn: bool = False,
                 locate: Callable[[str, int], str] = colon_location) -> Iterator[tuple[str, object]]:
    """(where, value) per non-blank line of `lines` (bytes are decoded as UTF-8, a byte-order mark dropped).

    Args:
        lines: the lines, e.g. an open file (text or binary), a zip member, or `text.splitlines()`.
        source: the file (or artifact) they come from, for `where`.
        skip_torn: skip a line that is not UTF-8 or not JSON instead of raising: the torn write an interrupted run
            leaves in a resumable output (its next run starts a fresh line after it).
        locate: (source, 1-based line number) -> where.

    Raises:
        CaseError: a line that is not UTF-8 (field "(bytes)") or not JSON (field "(line)"), naming where it is.

    >>> list(jsonl_values(['{"a": 1}', "", "[2]"], "x.jsonl"))
    [('x.jsonl:1', {'a': 1}), ('x.jsonl:3', [2])]
    >>> list(jsonl_values(['{"a": 1}', '{"a": '], "x.jsonl"))
    Traceback (most recent call last):
    ...
    factlab.data.errors.CaseError: x.jsonl:2: (line): not JSON (Expecting value at column 7)
    >>> [value for _, value in jsonl_values(['{"a": 1}', '{"a": ', '{"a": 2}'], "x.jsonl", skip_torn=True)]
    [{'a': 1}, {'a': 2}]
    """
    for number, raw in enumerate(lines, start=1):
        where = locate(source, number)
        if isinstance(raw, bytes):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if skip_torn:
                    continue
                raise CaseError(where, "(bytes)", f"expected UTF-8 text, got invalid byte "
                                                  f"{raw[exc.start:exc.start + 1]!r}; re-save the file as UTF-8"
                                ) from None
        else:
            line = raw
        if number == 1:
            line = line.removeprefix("\ufeff")
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if skip_torn:
                continue
            raise CaseError(where, "(line)", f"not JSON ({exc.msg} at column {exc.colno})") from None
        yield where, value


def iter_jsonl(path: Path | str, *, skip_torn: bool = False,
               locate: Callable[[str, int], str] = colon_location) -> Iterator[tuple[str, object]]:
    """(where, value) per non-blank line of a JSONL file, streamed; as `jsonl_values` (where = `file:line`)."""
    path = Path(path)
    with path.open("rb") as handle:
        yield from jsonl_values(handle, str(path), skip_torn=skip_torn, locate=locate)


def read_jsonl(path: Path | str, validate: Callable[[object, str], dict] | None = None, id_field: str | None = None,
               *, skip_torn: bool = False) -> list:
    """The values of a JSONL file, each `validate(value, where)`d when given (where = "file:line"), `id_field`
    unique when given.

    Raises:
        CaseError: a line that is not UTF-8 or JSON, or repeats an id (naming file, line and field); `validate`
            raises what it raises.
    """
    rows, ids = [], set()
    for where, value in iter_jsonl(path, skip_torn=skip_torn):
        row = validate(value, where) if validate is not None else value
        if id_field is not None:
            if row[id_field] in ids:
                raise CaseError(where, id_field, f"expected unique ids, got {row[id_field]!r} twice")
            ids.add(row[id_field])
        rows.append(row)
    return rows
