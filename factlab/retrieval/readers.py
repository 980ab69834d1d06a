"""Read one source file into documents: metadata + text per page. One reader per format, no chunking here.

Every reader returns `Document`s whose `pages` are the text that chunk offsets index. A file that cannot be
read at all raises `ReadError` (the caller records an `IngestIssue`); a bad line of a .jsonl file becomes a
`(line, reason)` problem while the other lines are still read.

>>> split_front_matter("---\\ntitle: WHO report\\nurl: https://who.int/x\\n---\\nBody text.")
({'title': 'WHO report', 'url': 'https://who.int/x'}, 'Body text.')
>>> find_doi("See https://doi.org/10.1056/NEJMoa2034577.")
'10.1056/NEJMoa2034577'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from factlab.schema import detect_language

_DOI_RE = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>，。；）]+")
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_BLOCK_TAGS = (
    "p", "div", "section", "article", "header", "footer", "li", "ul", "ol", "table", "tr", "blockquote", "pre",
    "h1", "h2", "h3", "h4", "h5", "h6", "figure", "figcaption", "dd", "dt", "main", "aside",
)  # fmt: skip


class ReadError(Exception):
    """The whole file is unreadable; the message says why and, where possible, what to do."""


@dataclass
class Document:
    """What a reader found: metadata fields of the source record schema, and the text of each page."""

    meta: dict
    pages: list[str]
    line: int | None = None  # the .jsonl line this document came from
    problems: list[str] = field(default_factory=list)  # non-fatal metadata problems (bad tier, bad year)


def find_doi(text: str) -> str:
    """The first DOI in `text`, without trailing punctuation; "" when there is none.

    >>> find_doi("no identifier here")
    ''
    """
    match = _DOI_RE.search(text)
    return match.group().rstrip(".,;:)]}") if match else ""


def decode_text(data: bytes, path: Path) -> str:
    """Decode UTF-8 (BOM allowed), else GB18030 when that yields Chinese text; raise ReadError otherwise.

    >>> decode_text("青霉素".encode("gbk"), Path("a.txt"))
    '青霉素'
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        try:
            text = data.decode("gb18030")
        except UnicodeDecodeError:
            text = ""
        if text and detect_language(text) == "zh":
            return text
        raise ReadError(
            f"not valid UTF-8 ({utf8_error.reason} at byte {utf8_error.start}) nor Chinese GB18030 text; "
            f"re-save {path.name} as UTF-8"
        ) from None


def split_front_matter(text: str) -> tuple[dict, str]:
    """Split a leading `---` YAML block (title, url, author, year, tier, ...) from the body.

    Raises:
        ReadError: the block is not a YAML mapping.
    """
    match = _FRONT_MATTER_RE.match(text)
    if not match:
        return {}, text
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ReadError(f"front matter is not valid YAML ({exc}); fix or remove the leading --- block") from None
    if not isinstance(meta, dict):
        raise ReadError("front matter must be a YAML mapping of metadata fields (title: ..., url: ...)")
    return meta, text[match.end() :]


def read_sidecar(path: Path) -> dict:
    """Metadata from `<file>.meta.json` next to a .pdf/.html/.txt/.md file, {} when there is none."""
    sidecar = path.with_name(path.name + ".meta.json")
    if not sidecar.exists():
        return {}
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReadError(f"sidecar {sidecar.name} is not valid UTF-8 JSON ({exc}); fix it or delete it") from None
    if not isinstance(meta, dict):
        raise ReadError(f"sidecar {sidecar.name} must hold a JSON object of metadata fields")
    return meta


def read_plain(path: Path) -> list[Document]:
    """A .txt or .md file: optional front matter, title from it, else the first `# ` heading, else the stem."""
    meta, body = split_front_matter(decode_text(path.read_bytes(), path))
    if "title" not in meta:
        heading = re.search(r"^#\s+(.+?)\s*#*\s*$", body, re.MULTILINE) if path.suffix != ".txt" else None
        meta["title"] = heading.group(1) if heading else path.stem
    return [Document(meta, [body])]


def read_html(path: Path) -> list[Document]:
    """An .html file: title from <title>, url from the canonical link, blocks separated by blank lines."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_bytes(), "html.parser")
    meta: dict = {}
    if soup.title and soup.title.get_text(strip=True):
        meta["title"] = soup.title.get_text(" ", strip=True)
    canonical = soup.find("link", rel="canonical") or soup.find("meta", property="og:url")
    if canonical is not None and (canonical.get("href") or canonical.get("content")):
        meta["url"] = canonical.get("href") or canonical.get("content")
    if (author := soup.find("meta", attrs={"name": "author"})) is not None and author.get("content"):
        meta["author"] = author["content"]
    for tag in soup(["script", "style", "noscript", "template", "head", "nav"]):
        tag.decompose()
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for tag in soup.find_all(_BLOCK_TAGS):
        tag.insert_before("\n\n")
        tag.insert_after("\n\n")
    raw = soup.get_text()
    lines = [re.sub(r"[ \t\u00a0\u3000]+", " ", line).strip() for line in raw.splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if not text:
        raise ReadError("no text in the HTML body")
    meta.setdefault("title", path.stem)
    return [Document(meta, [text])]


def read_pdf(path: Path) -> list[Document]:
    """A .pdf file: one page of text per PDF page (page numbers kept), title/author from the PDF info."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ReadError("encrypted PDF; save a decrypted copy")
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata
    except ReadError:
        raise
    except Exception as exc:  # pypdf raises many types (PdfReadError, ValueError, KeyError...) on broken files
        raise ReadError(f"unreadable PDF ({type(exc).__name__}: {exc}); re-export or replace the file") from None
    if not any(page.strip() for page in pages):
        raise ReadError("no extractable text in the PDF (a scan?); run OCR and ingest the text instead")
    meta: dict = {}
    if info is not None and info.title and str(info.title).strip():
        meta["title"] = str(info.title).strip()
    if info is not None and info.author and str(info.author).strip():
        meta["author"] = str(info.author).strip()
    meta.setdefault("title", path.stem)
    return [Document(meta, pages)]


def read_jsonl(path: Path) -> tuple[list[Document], list[tuple[int, str]]]:
    """A .jsonl file of source records (datasets/README.md): one document per valid line.

    Returns:
        The documents, and `(line, reason)` for every line that is not a usable record.
    """
    text = decode_text(path.read_bytes(), path)
    documents, problems = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append((number, f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(record, dict):
            problems.append((number, f"expected a JSON object (source record), got {type(record).__name__}"))
            continue
        pages = record.get("pages")
        if pages is None and isinstance(record.get("text"), str):
            pages = [record["text"]]
        if not isinstance(pages, list) or not all(isinstance(page, str) for page in pages):
            problems.append((number, "a source record needs `text` (string) or `pages` (list of strings)"))
            continue
        if not any(page.strip() for page in pages):
            problems.append((number, "empty `text` / `pages`; drop the record or fill it"))
            continue
        meta = {key: value for key, value in record.items() if key not in ("text", "pages")}
        documents.append(Document(meta, pages, line=number))
    return documents, problems


READERS = {".md": read_plain, ".markdown": read_plain, ".txt": read_plain, ".html": read_html, ".htm": read_html,
           ".pdf": read_pdf}  # fmt: skip
SOURCE_SUFFIXES: frozenset[str] = frozenset({*READERS, ".jsonl"})
