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


# Control characters a text document may hold (tab, line feed, carriage return, form feed); any other is binary.
_ALLOWED_CONTROLS = frozenset("\t\n\r\f")


def check_printable(text: str, what: str) -> str:
    r"""Refuse text that holds NUL bytes or other control characters (a binary file, a corrupt export): naming where
    the first one is and the fix. Returns the text.

    >>> check_printable("Plain text.\n", "x")
    'Plain text.\n'
    >>> check_printable("a\x00b", "report.md")
    Traceback (most recent call last):
    ...
    factlab.textio.InputError: report.md: control character U+0000 at line 1, column 2: not a text document; ...
    """
    for index, char in enumerate(text):
        if char not in _ALLOWED_CONTROLS and (ord(char) < 32 or 127 <= ord(char) < 160):
            line = text.count("\n", 0, index) + 1
            column = index - (text.rfind("\n", 0, index) + 1) + 1
            raise InputError(f"{what}: control character U+{ord(char):04X} at line {line}, column {column}: not a text "
                             "document; convert it to plain UTF-8 text")
    return text


def read_text_file(path: str | Path, max_chars: int | None = None) -> str:
    """Read a UTF-8 text document; raise InputError naming the file and the first undecodable byte, the first
    control character, or the size when it has more than `max_chars` characters."""
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
    require_text(text, f"input file {path}")
    check_printable(text, str(path))
    if max_chars is not None and len(text) > max_chars:
        raise InputError(f"{path}: {len(text):,} characters, more than max_document_chars={max_chars:,} (checking "
                         "scales with the text: about one LM call per sentence); split the document or raise the limit")
    return text
