"""Read rows from the upstream file formats (jsonl, json, csv, tsv), each with its location for error messages.

A location is ``<path> line N`` (jsonl), ``<path> item N`` (a json list) or ``<path> row N (line L)`` (csv / tsv),
always 1-based, so an error can say exactly which row of which file to look at.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.jsonl import iter_jsonl

FORMATS: tuple[str, ...] = ("jsonl", "json", "csv", "tsv")


def read_rows(path: Path | str, fmt: str, max_rows: int | None = None,
              columns: Sequence[str] | None = None) -> Iterator[tuple[str, object]]:
    """Yield ``(location, row)`` for the rows of one file; rows of jsonl / json come back as parsed JSON values.

    Args:
        path: the file to read.
        fmt: one of FORMATS.
        max_rows: stop after this many rows (None: all).
        columns: csv / tsv without a header line: the column names (empty cells past them are ignored).

    Raises:
        CaseError: invalid UTF-8 or JSON, naming the file and the line.
        ValueError: an unknown format.
    """
    readers = {"jsonl": _jsonl, "json": _json_list, "csv": _delimited, "tsv": _delimited}
    if fmt not in readers:
        raise ValueError(f"unknown format {fmt!r} for {path}; expected one of {', '.join(FORMATS)}")
    if max_rows is not None and max_rows <= 0:
        return
    for count, item in enumerate(readers[fmt](Path(path), fmt, columns), start=1):
        yield item
        if max_rows is not None and count >= max_rows:
            return


def _decode(path: Path, data: bytes, first_line: int = 1) -> str:
    """Decode UTF-8 (dropping a byte-order mark); `first_line` is the line number of data's first byte."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = first_line + data[: exc.start].count(b"\n")
        raise CaseError(f"{path} line {line}", "(bytes)",
                        f"expected UTF-8 text, got invalid byte {data[exc.start:exc.start + 1]!r}; "
                        "re-save the file as UTF-8") from None


def _jsonl(path: Path, _fmt: str, _columns=None) -> Iterator[tuple[str, object]]:
    yield from iter_jsonl(path, locate=lambda source, number: f"{source} line {number}")


def _json_list(path: Path, _fmt: str, _columns=None) -> Iterator[tuple[str, object]]:
    text = _decode(path, path.read_bytes())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseError(f"{path} line {exc.lineno}", "(file)",
                        f"expected a JSON document, got invalid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, list):
        raise CaseError(str(path), "(file)", f"expected a JSON list of rows, got {type(data).__name__}; "
                                             "for one object per line use format: jsonl")
    for number, row in enumerate(data, start=1):
        yield f"{path} item {number}", row


def _delimited(path: Path, fmt: str, columns: Sequence[str] | None = None) -> Iterator[tuple[str, object]]:
    text = _decode(path, path.read_bytes())
    # TSV files in the wild quote nothing; a stray " must stay part of the text.
    options = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}
    reader = csv.DictReader(io.StringIO(text, newline=""), fieldnames=list(columns) if columns else None, **options)
    for number, row in enumerate(reader, start=1):
        where = f"{path} row {number} (line {reader.line_num})"
        if None in row and columns and not any(cell.strip() for cell in row[None]):
            del row[None]  # trailing empty cells of a headerless file (extra tabs at the line end)
        if None in row:  # more cells than header columns
            columns = len(reader.fieldnames or [])
            raise CaseError(where, "(row)", f"expected {columns} columns, got {columns + len(row[None])}")
        yield where, row
