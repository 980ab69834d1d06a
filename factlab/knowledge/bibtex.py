r"""A small, tolerant BibTeX reader: one bad entry is a problem naming the file, line and field, never the end.

The file is cut at every line that opens an entry (`@type{` or `@type(`), so an unclosed brace spoils only its own
entry. Values may be `{...}` (nested), `"..."`, numbers, `@string` macros and month names, joined with `#`; common
TeX accents and escapes become Unicode. A missing closing brace at the very end of an entry is forgiven.

>>> entries, problems = parse_bibtex('@article{lee2020, title = {Deep {L}earning}, author = "Lee, A. and Kim, B."}')
>>> entries[0].key, entries[0].fields["title"], problems
('lee2020', 'Deep Learning', [])
>>> latex_to_text(r"M\"{u}ller \& Co --- {\'E}cole")
'Müller & Co — École'
>>> [(c.family, c.given) for c in bibtex_creators("{World Health Organization} and Fleming, Alexander and J. Doe")]
[('World Health Organization', ''), ('Fleming', 'Alexander'), ('Doe', 'J.')]
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from factlab.knowledge.attachments import files_for_key
from factlab.knowledge.csljson import record_version
from factlab.knowledge.items import Attachment, Creator, Item, ItemRef, KnowledgeError, Library, unique_items

MONTHS = {m: str(i) for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
VENUE_FIELDS = ("journal", "journaltitle", "booktitle", "school", "institution", "publisher")
_ENTRY_START = re.compile(r"^[ \t]*@[ \t]*([A-Za-z]+)[ \t]*([{(])", re.MULTILINE)
_FIELD_NAME = re.compile(r"[A-Za-z_][\w\-:.+]*")
_BARE_VALUE = re.compile(r"[\w\-:.+/]+")  # a number or a macro name
_SWALLOWED = re.compile(r"\n\s*[A-Za-z][\w\-]*\s*=\s*[{\"\w]")  # a field assignment inside a value
_KEY = re.compile(r"[^,\s{}()=\"#%'~\\]+")
_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304", ".": "\u0307",
            "c": "\u0327", "u": "\u0306", "v": "\u030c", "H": "\u030b", "k": "\u0328", "r": "\u030a"}
_LETTERS = {"ss": "ß", "o": "ø", "O": "Ø", "aa": "å", "AA": "Å", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ",
            "l": "ł", "L": "Ł", "i": "ı"}


class BibtexError(KnowledgeError):
    """One entry that could not be read: `where` (file:line), the entry key, the field and what is wrong."""

    def __init__(self, where: str, key: str, field_name: str, problem: str) -> None:
        self.where, self.key, self.field, self.problem = where, key, field_name, problem
        entry = f" entry {key!r}," if key else ""
        super().__init__(f"{where}:{entry} field `{field_name}`: {problem}; the entry is skipped")


@dataclass(frozen=True)
class BibEntry:
    """One parsed entry: type and key as written, field names lower-cased, values as Unicode text."""

    entry_type: str
    key: str
    fields: dict[str, str]
    line: int
    raw: dict[str, str] = field(default_factory=dict)  # values before TeX clean-up (names, file lists)


def latex_to_text(value: str) -> str:
    """A TeX field value as plain Unicode: accents composed, escapes and commands dropped, braces removed."""

    def accent(match: re.Match) -> str:
        base = "i" if match.group(2) == "\\i" else match.group(2)
        return unicodedata.normalize("NFC", base + _ACCENTS[match.group(1)])

    value = re.sub(r"\\([\"'`^~=.])\s*\{?\s*(\\i(?![a-zA-Z])|[A-Za-z])", accent, value)
    value = re.sub(r"\\([cuvHkr])(?:\s+|\s*\{\s*)(\\i(?![a-zA-Z])|[A-Za-z])", accent, value)
    value = re.sub(r"\\(ss|aa|AA|ae|AE|oe|OE|o|O|l|L|i)(?![a-zA-Z])\s*", lambda m: _LETTERS[m.group(1)], value)
    value = re.sub(r"\\([&%$_#{}])", r"\1", value)
    value = value.replace("---", "\u2014").replace("--", "\u2013").replace("~", " ")
    value = re.sub(r"\\[a-zA-Z]+\*?\s*", "", value)  # \emph, \textit... keep their argument
    value = value.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", value).strip()


def _split_top(text: str, separator: re.Pattern) -> list[str]:
    """`text` split at `separator` matches that lie outside braces."""
    parts, depth, start, index = [], 0, 0, 0
    while index < len(text):
        char = text[index]
        depth += char == "{"
        depth -= char == "}"
        if depth == 0 and (match := separator.match(text, index)):
            parts.append(text[start:index])
            start = index = match.end()
            continue
        index += 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def bibtex_creators(value: str, role: str = "author") -> tuple[Creator, ...]:
    """The names of an `author`/`editor` value ("Last, First", "First Last", "{Institution}"; "others" dropped)."""
    creators = []
    for name in _split_top(value, re.compile(r"\s+and\s+", re.I)):
        if name.lower() == "others":
            continue
        if name.startswith("{") and name.endswith("}") and name.count("{") == 1:
            creators.append(Creator(latex_to_text(name), "", role))
            continue
        pieces = _split_top(name, re.compile(r"\s*,\s*"))
        if len(pieces) >= 2:  # "Last, First" or "Last, Jr, First"
            creators.append(Creator(latex_to_text(pieces[0]), latex_to_text(pieces[-1]), role))
            continue
        words = _split_top(name, re.compile(r"\s+"))
        family_from = next((i for i, w in enumerate(words[:-1]) if i and w[:1].islower()), len(words) - 1)
        creators.append(Creator(latex_to_text(" ".join(words[family_from:])),
                                latex_to_text(" ".join(words[:family_from])), role))
    return tuple(creators)


class _Cursor:
    """Reads one entry's text from `pos`; positions map back to file lines through `first_line`."""

    def __init__(self, text: str, pos: int, where: str, first_line: int) -> None:
        self.text, self.pos, self.where, self.first_line = text, pos, where, first_line

    def line(self, pos: int | None = None) -> int:
        return self.first_line + self.text.count("\n", 0, self.pos if pos is None else pos)

    def skip(self, chars: str = " \t\r\n") -> None:
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1

    def at_end(self) -> bool:
        return self.pos >= len(self.text)


def _scan(cur: _Cursor, start: int, closes) -> str | None:
    """Advance over a value from `cur.pos` (backslash escapes skipped, brace depth tracked) until `closes(char,
    depth)` holds after a character; the value between `start` and that character, or None at the end of text."""
    depth = 0
    while cur.pos < len(cur.text):
        char = cur.text[cur.pos]
        if char == "\\":
            cur.pos += 2
            continue
        depth += char == "{"
        depth -= char == "}"
        cur.pos += 1
        if closes(char, depth):
            return cur.text[start + 1: cur.pos - 1]
    return None


def _braced(cur: _Cursor, key: str, name: str) -> str:
    start = cur.pos
    value = _scan(cur, start, lambda char, depth: depth == 0)
    if value is not None:
        return value
    raise BibtexError(f"{cur.where}:{cur.line(start)}", key, name,
                      f"unbalanced braces: the {{ opened at line {cur.line(start)} is never closed; close it")


def _quoted(cur: _Cursor, key: str, name: str) -> str:
    start = cur.pos
    cur.pos += 1
    value = _scan(cur, start, lambda char, depth: char == '"' and depth == 0)
    if value is not None:
        return value
    raise BibtexError(f"{cur.where}:{cur.line(start)}", key, name,
                      f'unterminated "..." value opened at line {cur.line(start)}; close the quote')


def _value(cur: _Cursor, key: str, name: str, macros: dict[str, str]) -> str:
    parts = []
    while True:
        cur.skip()
        if cur.at_end():
            raise BibtexError(f"{cur.where}:{cur.line()}", key, name, "expected a value after `=`, got the end of "
                                                                      "the entry")
        char = cur.text[cur.pos]
        if char == "{":
            parts.append(_braced(cur, key, name))
        elif char == '"':
            parts.append(_quoted(cur, key, name))
        elif match := _BARE_VALUE.match(cur.text, cur.pos):
            word = match.group()
            cur.pos = match.end()
            parts.append(word if word.isdigit() else macros.get(word.lower(), MONTHS.get(word.lower()[:3], word)))
        else:
            raise BibtexError(f"{cur.where}:{cur.line()}", key, name,
                              f"expected a value ({{...}}, \"...\", a number or a macro), got {char!r}")
        cur.skip()
        if cur.at_end() or cur.text[cur.pos] != "#":
            return "".join(parts)
        cur.pos += 1


def _fields(cur: _Cursor, key: str, macros: dict[str, str], close: str, problems: list[BibtexError],
            lines: dict[str, int] | None = None) -> dict[str, str]:
    """The entry's fields up to its closing delimiter (or the end of its text); `lines` gets each value's line."""
    found: dict[str, str] = {}
    lines = {} if lines is None else lines
    while True:
        cur.skip(" \t\r\n,")
        if cur.at_end() or cur.text[cur.pos] == close:
            return found
        match = _FIELD_NAME.match(cur.text, cur.pos)
        if not match:
            last = next(reversed(found), "(key)")
            raise BibtexError(f"{cur.where}:{cur.line()}", key, last,
                              f"expected a field name after it, got {cur.text[cur.pos:cur.pos + 20]!r} (a missing "
                              "comma or a stray character?)")
        name = match.group().lower()
        cur.pos = match.end()
        cur.skip()
        if cur.at_end() or cur.text[cur.pos] != "=":
            raise BibtexError(f"{cur.where}:{cur.line()}", key, name, "expected `=` after the field name")
        cur.pos += 1
        cur.skip()
        value_line = cur.line()
        value = _value(cur, key, name, macros)
        if name in found:
            problems.append(BibtexError(f"{cur.where}:{cur.line()}", key, name, "given twice; the first value is "
                                        "kept"))
            continue
        found[name], lines[name] = value, value_line


def _check_swallowed(raw: dict[str, str], lines: dict[str, int], key: str, where: str) -> None:
    """Raise for the first value that holds what looks like the next field (`author = {...`): its `{` was never
    closed where it should have been, and the entry's own closing brace closed it."""
    for name, value in raw.items():
        if match := _SWALLOWED.search(value):
            raise BibtexError(f"{where}:{lines[name]}", key, name,
                              f"unbalanced braces: the {{ opened at line {lines[name]} is never closed (the value "
                              f"runs on into {match.group().strip()!r}...); close it")


def parse_bibtex(text: str, where: str = "<bibtex>") -> tuple[list[BibEntry], list[BibtexError]]:
    """Every readable entry of a BibTeX text, and one BibtexError per entry (or field) that could not be read.

    >>> entries, problems = parse_bibtex("@misc{ok, title={A}}\\n@misc{bad, title={B\\n@misc{ok2, title={C}}", "x.bib")
    >>> [e.key for e in entries], [str(p) for p in problems]
    (['ok', 'ok2'], ["x.bib:2: entry 'bad', field `title`: unbalanced braces: the { opened at line 2 is never \
closed; close it; the entry is skipped"])
    """
    starts = list(_ENTRY_START.finditer(text))
    macros: dict[str, str] = {}
    entries, problems = [], []
    for number, start in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else len(text)
        entry_type, opener = start.group(1).lower(), start.group(2)
        close = "}" if opener == "{" else ")"
        first_line = text.count("\n", 0, start.start()) + 1
        chunk = text[start.start():end]
        cur = _Cursor(chunk, start.end() - start.start(), where, first_line)
        if entry_type in ("comment", "preamble"):
            continue
        try:
            if entry_type == "string":
                defined = _fields(cur, "@string", macros, close, problems)
                macros.update({name: latex_to_text(value) for name, value in defined.items()})
                continue
            cur.skip()
            key_match = _KEY.match(chunk, cur.pos)
            cur.pos = key_match.end() if key_match else cur.pos
            cur.skip()
            if not key_match or cur.at_end() or chunk[cur.pos] != ",":
                raise BibtexError(f"{where}:{first_line}", key_match.group() if key_match else "", "(key)",
                                  "expected `@type{key,` : a citation key followed by a comma")
            cur.pos += 1
            lines: dict[str, int] = {}
            raw = _fields(cur, key_match.group(), macros, close, problems, lines)
            if cur.at_end():  # no closing delimiter: forgiven, unless a brace swallowed the fields after it
                _check_swallowed(raw, lines, key_match.group(), where)
        except BibtexError as exc:
            problems.append(exc)
            continue
        entries.append(BibEntry(entry_type, key_match.group(), {k: latex_to_text(v) for k, v in raw.items()},
                                first_line, raw))
    return entries, problems


def _file_field(value: str, folder: Path) -> tuple[Attachment, ...]:
    """Zotero/JabRef `file` values ("desc:path:mime;..."), paths resolved against `folder`."""
    found = []
    for part in re.split(r"(?<!\\);", value):
        pieces = [p.replace("\\:", ":").replace("\\;", ";") for p in re.split(r"(?<!\\):", part)]
        raw = pieces[1] if len(pieces) >= 3 else pieces[0]
        if raw.strip():
            path = Path(raw.strip().replace("\\\\", "\\"))
            found.append(Attachment(path if path.is_absolute() else folder / path, pieces[-1] if len(pieces) >= 3
                                    else "", title=pieces[0] if len(pieces) >= 3 else path.name))
    return tuple(found)


def _item(entry: BibEntry, library_id: str, folder: Path, attachments_dir: Path | None) -> Item:
    f = entry.fields
    year_text = f.get("year") or f.get("date", "")[:4]
    creators = bibtex_creators(entry.raw.get("author", "")) + bibtex_creators(entry.raw.get("editor", ""), "editor")
    files = _file_field(entry.raw["file"], attachments_dir or folder) if "file" in entry.raw else ()
    core = {"title", "author", "editor", "year", "date", "doi", "abstract", "url", "keywords", "file", *VENUE_FIELDS}
    return Item(
        ref=ItemRef(library_id, entry.key, record_version({"type": entry.entry_type, "key": entry.key, **entry.raw})),
        item_type=entry.entry_type,
        title=f.get("title", ""),
        creators=creators,
        year=int(year_text) if year_text.isdigit() else None,
        doi=f.get("doi", ""),
        venue=next((f[name] for name in VENUE_FIELDS if f.get(name)), ""),
        abstract=f.get("abstract", ""),
        url=f.get("url", ""),
        date=f.get("date", "") or year_text,
        citation_key=entry.key,
        extra=tuple((k, v) for k, v in f.items() if k not in core),
        tags=tuple(t.strip() for t in re.split(r"[,;]", f.get("keywords", "")) if t.strip()),
        attachments=files + files_for_key(attachments_dir, entry.key),
    )


def read_bibtex(path: str | Path, attachments_dir: str | Path | None = None, library_id: str | None = None
                ) -> Library:
    """The items of a .bib file; entries that cannot be read are in `Library.problems` (file:line, key, field).

    Args:
        path: the .bib file (UTF-8).
        attachments_dir: folder of attachment files named by citation key, and the base of relative `file` paths
            (default: the .bib file's folder).
        library_id: default `bibtex:<file stem>`.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise KnowledgeError(f"{path}: no such BibTeX file") from None
    except UnicodeDecodeError as exc:
        raise KnowledgeError(f"{path}: not UTF-8 (byte {exc.start}); export the .bib again as UTF-8") from None
    entries, errors = parse_bibtex(text, str(path))
    library_id = library_id or f"bibtex:{path.stem}"
    folder = Path(attachments_dir) if attachments_dir is not None else None
    items, duplicates = unique_items((_item(e, library_id, path.parent, folder) for e in entries), str(path))
    return Library(path.name, path, items, tuple(str(e) for e in errors) + tuple(duplicates))
