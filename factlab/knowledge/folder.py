"""A plain folder of files as a library: each file is one item whose only attachment is the file itself.

The item key is a stable hash of the file's path relative to the folder (moving the folder keeps the keys; renaming
a file makes a new item); the version is a hash of its size and modification time, so listing the folder never
reads a file's content (that needs a grant, like any attachment). Hidden files and folders are skipped, and so are
`<file>.meta.json` sidecars, whose title / author / year / url / doi fill the item's metadata.

>>> folder_key("reports/WHO 2023.pdf")
'f-ad5e64eae2d2'
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from factlab.knowledge.attachments import READABLE_SUFFIXES
from factlab.knowledge.items import Attachment, Creator, Item, ItemRef, KnowledgeError, Library

_CONTENT_TYPES = {".pdf": "application/pdf", ".html": "text/html", ".htm": "text/html", ".txt": "text/plain",
                  ".md": "text/markdown", ".markdown": "text/markdown"}


def folder_key(relative_path: str) -> str:
    """The item key of a file: "f-" and 12 hex digits of the sha1 of its relative posix path."""
    return "f-" + hashlib.sha1(relative_path.encode("utf-8")).hexdigest()[:12]


def _sidecar(path: Path, problems: list[str]) -> dict:
    sidecar = path.with_name(path.name + ".meta.json")
    if not sidecar.is_file():
        return {}
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{sidecar}: not UTF-8 JSON ({exc}); its metadata is ignored, fix or delete it")
        return {}
    if not isinstance(meta, dict):
        problems.append(f"{sidecar}: expected a JSON object of metadata fields; ignored")
        return {}
    return meta


def read_folder(folder: str | Path, library_id: str | None = None) -> Library:
    """Every readable file under `folder` (.pdf .txt .md .html) as an item.

    Args:
        folder: the folder of source files (never written).
        library_id: default `folder:<folder name>`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise KnowledgeError(f"{folder}: not a folder; pass the folder that holds the source files")
    library_id = library_id or f"folder:{folder.resolve().name}"
    items, problems = [], []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        if path.name.endswith(".meta.json"):
            continue
        if path.suffix.lower() not in READABLE_SUFFIXES:
            problems.append(f"{path}: {path.suffix or 'suffix-less'} files are not read; expected one of "
                            f"{', '.join(sorted(READABLE_SUFFIXES))}")
            continue
        stat = path.stat()
        version = hashlib.sha1(f"{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
        meta = _sidecar(path, problems)
        year = meta.get("year")
        items.append(Item(
            ref=ItemRef(library_id, folder_key(relative.as_posix()), version),
            item_type="document",
            title=str(meta.get("title") or path.stem),
            creators=(Creator(str(meta["author"])),) if meta.get("author") else (),
            year=year if isinstance(year, int) else None,
            doi=str(meta.get("doi") or ""),
            url=str(meta.get("url") or ""),
            abstract=str(meta.get("abstract") or ""),
            extra=(("path", relative.as_posix()),),
            attachments=(Attachment(path, _CONTENT_TYPES.get(path.suffix.lower(), ""), title=path.name),),
        ))
    return Library(folder.name, folder, tuple(items), tuple(problems))
