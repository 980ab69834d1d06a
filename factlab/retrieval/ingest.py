"""Ingest a folder of sources (.md .txt .html .pdf .jsonl) into `Source`s and `Chunk`s with stable ids.

Ids never depend on ingest order or time: a record's own `source_id`, else a slug of the relative path plus
a short hash of it, and chunks `<source_id>#p<page>-c<n>`. Re-ingesting a folder gives the same ids.

>>> path_source_id("reports/WHO Report 2023.pdf")
'reports-who-report-2023-pdf-60280763'
>>> path_source_id("资料/青霉素.md")
'md-1ab2d940'
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from factlab.retrieval.chunking import chunk_spans
from factlab.retrieval.readers import READERS, SOURCE_SUFFIXES, Document, ReadError, find_doi, read_jsonl, read_sidecar
from factlab.retrieval.records import Chunk, IngestIssue, Source
from factlab.retrieval.tiers import TIERS, TierTables, domain_from_url
from factlab.schema import detect_language
from factlab.textio import InputError

logger = logging.getLogger(__name__)

_SOURCE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def slugify(text: str, max_len: int = 48) -> str:
    """Lower-case ASCII slug: runs of anything but a-z0-9 become one "-".

    >>> slugify("Über  die Grippe (2023)")
    'uber-die-grippe-2023'
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:max_len].strip("-")


def path_source_id(relative_path: str) -> str:
    """A stable source id for a file without one: slug of its relative path + 8 hex of the path's sha1."""
    digest = hashlib.sha1(relative_path.encode("utf-8")).hexdigest()[:8]
    slug = slugify(relative_path)
    return f"{slug}-{digest}" if slug else f"src-{digest}"


class SourcesFolderError(InputError):
    """The sources folder is missing, not a folder, or empty (bad input: the message says what to pass)."""


def check_folder(folder: str | Path, exclude: Iterable[str | Path] = ()) -> list[str]:
    """The source files under `folder` (relative posix paths, sorted), or a clear error.

    Hidden files and folders (".name") and the folders in `exclude` (e.g. an index kept inside) are skipped.

    Raises:
        SourcesFolderError: `folder` does not exist, is not a folder, or holds no source file.
    """
    root = Path(folder)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise SourcesFolderError(f"sources folder {root.resolve()} {what}; pass the folder holding the source files")
    files = list_source_files(root, exclude)
    if not files:
        raise SourcesFolderError(
            f"sources folder {root.resolve()} holds no source file; add {', '.join(sorted(SOURCE_SUFFIXES))} files"
        )
    return files


def list_source_files(root: Path, exclude: Iterable[str | Path] = ()) -> list[str]:
    """Relative posix paths of every ingestible file under root, sorted; hidden and excluded paths skipped."""
    excluded = [Path(path).resolve() for path in exclude]
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or path.suffix.lower() not in SOURCE_SUFFIXES:
            continue
        resolved = path.resolve()
        if any(resolved == ex or ex in resolved.parents for ex in excluded) or not path.is_file():
            continue
        found.append(relative.as_posix())
    return sorted(found)


def file_fingerprint(root: Path, relative_path: str) -> str:
    """sha256 of a source file and of its `.meta.json` sidecar: what decides whether it must be re-read."""
    path = root / relative_path
    digest = hashlib.sha256(path.read_bytes())
    sidecar = path.with_name(path.name + ".meta.json")
    if sidecar.exists():
        digest.update(b"\0sidecar\0" + sidecar.read_bytes())
    return digest.hexdigest()


@dataclass
class FileIngest:
    """Everything one file yielded: each source with its chunks, and the issues met."""

    entries: list[tuple[Source, list[Chunk]]] = field(default_factory=list)
    issues: list[IngestIssue] = field(default_factory=list)


def _year(value, problems: list[str]) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(str(value)[:4])
    except ValueError:
        problems.append(f"`year` must be a year like 2023, got {value!r}; ignored")
        return None


def _explicit_tier(value, problems: list[str]) -> int | None:
    if value in (None, ""):
        return None
    try:
        tier = int(value)
    except (TypeError, ValueError):
        tier = None
    if tier not in TIERS:
        problems.append(f"`tier` must be one of {list(TIERS)}, got {value!r}; using the tier tables instead")
        return None
    return tier


def _make_source(
    document: Document, relative_path: str, extra_meta: dict, tiers: TierTables, default_vertical: str
) -> tuple[Source | None, list[str]]:
    """Metadata -> Source (tier, domain, doi, lang filled in), plus non-fatal problems; None if the id is bad."""
    meta = {**extra_meta, **document.meta}
    problems = list(document.problems)
    raw_id = meta.get("source_id")
    if raw_id in (None, ""):
        where = relative_path if document.line is None else f"{relative_path}:{document.line}"
        source_id = path_source_id(where)
    else:
        source_id = str(raw_id)
        if not _SOURCE_ID_RE.match(source_id):
            problems.append(f"source_id {source_id!r} may hold only letters, digits, '.', '_', '-' (no '#', spaces)")
            return None, problems
    url = str(meta.get("url") or "")
    domain = str(meta.get("domain") or domain_from_url(url)).lower()
    vertical = str(meta.get("vertical") or default_vertical)
    tier = _explicit_tier(meta.get("tier"), problems)
    text_sample = "\n".join(document.pages)
    source = Source(
        source_id=source_id,
        path=relative_path,
        title=str(meta.get("title") or source_id),
        tier=tier if tier is not None else tiers.tier_for(domain, vertical),
        author=str(meta.get("author") or ""),
        year=_year(meta.get("year"), problems),
        url=url,
        domain=domain,
        doi=str(meta.get("doi") or find_doi(text_sample)),
        vertical=vertical,
        lang=str(meta.get("lang") or detect_language(text_sample[:4000])),
        pages=len(document.pages),
        line=document.line,
    )
    return source, problems


def chunk_document(source: Source, pages: list[str], max_chars: int) -> list[Chunk]:
    """Chunk every page of a source; ids `<source_id>#p<page>-c<n>`, offsets into that page's text."""
    chunks = []
    for page_number, page_text in enumerate(pages, 1):
        for n, (start, end) in enumerate(chunk_spans(page_text, max_chars), 1):
            chunk_id = Chunk.make_id(source.source_id, page_number, n)
            chunks.append(Chunk(chunk_id, source.source_id, page_number, n, start, end, page_text[start:end]))
    return chunks


def ingest_file(
    root: str | Path, relative_path: str, *, max_chars: int, tiers: TierTables, default_vertical: str
) -> FileIngest:
    """Read, tier and chunk one file; problems become `IngestIssue`s (logged), never exceptions.

    Args:
        root: the ingested folder.
        relative_path: the file, relative to root (posix), as `list_source_files` gives it.
        max_chars: chunk size bound in characters.
        tiers: the tier tables.
        default_vertical: vertical of sources whose metadata names none (selects the tier table).
    """
    path = Path(root) / relative_path
    result = FileIngest()
    try:
        if path.suffix.lower() == ".jsonl":
            documents, line_problems = read_jsonl(path)
            extra_meta: dict = {}
            result.issues.extend(IngestIssue(relative_path, reason, line) for line, reason in line_problems)
        else:
            documents = READERS[path.suffix.lower()](path)
            extra_meta = read_sidecar(path)
    except ReadError as exc:
        result.issues.append(IngestIssue(relative_path, str(exc)))
        documents = []
    except OSError as exc:
        result.issues.append(IngestIssue(relative_path, f"cannot read the file ({exc.strerror})"))
        documents = []
    for document in documents:
        source, problems = _make_source(document, relative_path, extra_meta, tiers, default_vertical)
        result.issues.extend(IngestIssue(relative_path, problem, document.line) for problem in problems)
        if source is None:
            continue
        chunks = chunk_document(source, document.pages, max_chars)
        if not chunks:
            result.issues.append(IngestIssue(relative_path, "no text to index", document.line))
            continue
        result.entries.append((source, chunks))
    for issue in result.issues:
        logger.warning("ingest issue: %s", issue)
    return result


def drop_duplicate_ids(results: list[tuple[str, FileIngest]]) -> tuple[list[Source], list[Chunk], list[IngestIssue]]:
    """Merge per-file results in path order; a source_id seen before is an issue and its later copy is dropped."""
    seen: dict[str, str] = {}
    sources, chunks, issues = [], [], []
    for relative_path, result in results:
        issues.extend(result.issues)
        for source, source_chunks in result.entries:
            if source.source_id in seen:
                issue = IngestIssue(
                    relative_path,
                    f"duplicate source_id {source.source_id!r} (first in {seen[source.source_id]}); "
                    "give each source a unique id",
                    source.line,
                )
                logger.warning("ingest issue: %s", issue)
                issues.append(issue)
                continue
            seen[source.source_id] = source.path if source.line is None else f"{source.path}:{source.line}"
            sources.append(source)
            chunks.extend(source_chunks)
    return sources, chunks, issues


def ingest(
    folder: str | Path,
    *,
    max_chars: int,
    tiers: TierTables,
    default_vertical: str = "general",
    exclude: Iterable[str | Path] = (),
) -> tuple[list[Source], list[Chunk], list[IngestIssue]]:
    """Ingest every source file under `folder`.

    Args:
        folder: the sources folder (searched recursively; hidden paths skipped).
        max_chars: chunk size bound in characters (conf: retrieval.ingest.max_chars).
        tiers: the tier tables (`TierTables.from_config(cfg.retrieval.tiers)`).
        default_vertical: vertical of sources whose metadata names none.
        exclude: folders under `folder` to skip, e.g. an index directory kept inside it.

    Returns:
        (sources, chunks, issues), in path order; the same folder always gives the same ids.

    Raises:
        FileNotFoundError: `folder` is missing.
        ValueError: `folder` holds no source file.
    """
    root = Path(folder)
    files = check_folder(root, exclude)
    results = [
        (path, ingest_file(root, path, max_chars=max_chars, tiers=tiers, default_vertical=default_vertical))
        for path in files
    ]
    return drop_duplicate_ids(results)
