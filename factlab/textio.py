"""Reading user text: clear errors for missing files, bad encodings and empty input."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad user input; the message names the file (and byte offset) or the field."""


def require_text(text: str | None, what: str) -> str:
    """Return `text` if it has non-whitespace content, else raise InputError naming `what`.

    >>> require_text(" x ", "claim")
    ' x '
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what} is empty or whitespace only")
    return text


def read_text_file(path: str | Path) -> str:
    """Read a UTF-8 text file; raise InputError naming the file and the first undecodable byte."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"input file not found: {path}")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{path}: not valid UTF-8 at byte {exc.start} (line {line}): {data[exc.start:exc.start + 4]!r}; "
            "convert it, e.g. iconv -f GBK -t UTF-8"
        ) from exc
    return require_text(text, f"input file {path}")
