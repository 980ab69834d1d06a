"""Read a CSL-JSON export (Zotero, Better BibTeX, Mendeley, pandoc) and write items back as CSL-JSON.

Each CSL item becomes one `Item`: its `id` is the item key, its version a short hash of the record (an edited
record is a new version). An optional attachment folder supplies files as `<folder>/<id>.*` or `<folder>/<id>/*`.
A record that is not an object or has no `id` is a problem line naming the file and the item's index; the others
still import.

>>> csl_year({"date-parts": [[2021, 3]]}), csl_year({"raw": "March 2019"}), csl_year(None)
(2021, 2019, None)
>>> csl_creator({"family": "Fleming", "given": "Alexander"}), csl_creator({"literal": "WHO"}).family
(Creator(family='Fleming', given='Alexander', role='author'), 'WHO')
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from factlab.knowledge.attachments import files_for_key
from factlab.knowledge.items import Creator, Item, ItemRef, KnowledgeError, Library, unique_items

CREATOR_ROLES = ("author", "editor", "translator", "director", "interviewer", "recipient", "container-author")
_CORE_KEYS = {"id", "type", "title", "issued", "DOI", "container-title", "abstract", "URL", "keyword",
              "citation-key", *CREATOR_ROLES}


def record_version(record: dict) -> str:
    """A short, stable hash of a record's content: the version of a record from a file without versions.

    >>> record_version({"id": "a", "title": "T"}) == record_version({"title": "T", "id": "a"})
    True
    """
    return hashlib.sha1(json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:12]


def csl_year(issued: object) -> int | None:
    """The year of a CSL date object (`date-parts`, `raw` or `literal`), None when it has none."""
    if not isinstance(issued, dict):
        return None
    parts = issued.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
        with_year = str(parts[0][0])
        return int(with_year) if with_year.lstrip("-").isdigit() else None
    match = re.search(r"\b(\d{4})\b", str(issued.get("raw") or issued.get("literal") or ""))
    return int(match.group(1)) if match else None


def csl_creator(name: dict, role: str = "author") -> Creator:
    """A CSL name object as a Creator (`literal` names, institutions, go in `family`)."""
    family = name.get("family") or name.get("literal") or ""
    return Creator(str(family), str(name.get("given") or ""), role)


def _item(record: dict, library_id: str, attachments_dir: Path | None) -> Item:
    key = str(record["id"])
    keywords = record.get("keyword") or ""
    extra = tuple((k, str(v)) for k, v in sorted(record.items()) if k not in _CORE_KEYS and isinstance(v, str | int))
    return Item(
        ref=ItemRef(library_id, key, record_version(record)),
        item_type=str(record.get("type") or ""),
        title=str(record.get("title") or ""),
        creators=tuple(csl_creator(name, role) for role in CREATOR_ROLES for name in record.get(role) or []
                       if isinstance(name, dict)),
        year=csl_year(record.get("issued")),
        doi=str(record.get("DOI") or ""),
        venue=str(record.get("container-title") or ""),
        abstract=str(record.get("abstract") or ""),
        url=str(record.get("URL") or ""),
        citation_key=str(record.get("citation-key") or key),
        extra=extra,
        tags=tuple(t.strip() for t in re.split(r"[,;]", str(keywords)) if t.strip()),
        attachments=files_for_key(attachments_dir, key),
    )


def read_csl_json(path: str | Path, attachments_dir: str | Path | None = None, library_id: str | None = None
                  ) -> Library:
    """The items of a CSL-JSON file (a list of CSL items, or `{"items": [...]}`).

    Args:
        path: the .json file.
        attachments_dir: folder of attachment files named by item id (optional).
        library_id: default `csl:<file stem>`.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise KnowledgeError(f"{path}: no such CSL-JSON file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KnowledgeError(f"{path}: not UTF-8 JSON ({exc}); export the library again as CSL JSON") from None
    records = data.get("items") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise KnowledgeError(f"{path}: expected a JSON list of CSL items (or {{\"items\": [...]}}), got "
                             f"{type(data).__name__}")
    library_id = library_id or f"csl:{path.stem}"
    folder = Path(attachments_dir) if attachments_dir is not None else None
    items, problems = [], []
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not str(record.get("id") or "").strip():
            problems.append(f"{path}: item [{index}]: field `id`: expected an object with a non-empty id, got "
                            f"{json.dumps(record, ensure_ascii=False)[:60]}; the item is skipped")
            continue
        items.append(_item(record, library_id, folder))
    kept, duplicates = unique_items(items, str(path))
    return Library(path.name, path, kept, tuple(problems + duplicates))


def to_csl(item: Item) -> dict:
    """The item's metadata as a CSL-JSON item (unchanged values; absent fields left out).

    >>> to_csl(Item(ItemRef("csl:x", "k1", "v"), "article-journal", "T", (Creator("Lee", "A"),), 2020))
    {'id': 'k1', 'type': 'article-journal', 'title': 'T', 'author': [{'family': 'Lee', 'given': 'A'}], \
'issued': {'date-parts': [[2020]]}}
    """
    record: dict = {"id": item.ref.item_key, "type": item.item_type or "document", "title": item.title}
    for role in dict.fromkeys(c.role for c in item.creators):
        csl_role = role if role in CREATOR_ROLES else "author"
        record.setdefault(csl_role, []).extend(
            {"family": c.family, "given": c.given} if c.given else {"literal": c.family}
            for c in item.creators if c.role == role)
    if item.year is not None:
        record["issued"] = {"date-parts": [[item.year]]}
    for key, value in (("DOI", item.doi), ("container-title", item.venue), ("abstract", item.abstract),
                       ("URL", item.url), ("keyword", ", ".join(item.tags))):
        if value:
            record[key] = value
    if item.citation_key and item.citation_key != item.ref.item_key:
        record["citation-key"] = item.citation_key
    return record
