"""Attachments (PDFs, snapshots, text files) are read only under an explicit grant given for one task.

Importing a library records where its files are; it never opens them. A task that needs the full text passes an
`AttachmentGrant` naming itself and the items it may read; `read_attachment` refuses anything the grant does not
cover, with an error naming the item. Files are opened for reading only.

>>> grant = AttachmentGrant("verify-2026-12-01", "zotero:1", frozenset({"ABCD2345"}))
>>> grant.covers("zotero:1", "ABCD2345"), grant.covers("zotero:1", "ZZZZ2345"), grant.covers("bibtex:refs", "ABCD2345")
(True, False, False)
>>> AttachmentGrant.every_item("verify", "zotero:1").covers("zotero:1", "ANY")
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from factlab.knowledge.items import Attachment, Item, KnowledgeError

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
READABLE_SUFFIXES = frozenset({".pdf", *TEXT_SUFFIXES, *HTML_SUFFIXES})


class AttachmentNotAuthorised(KnowledgeError):
    """An attachment was to be read without a grant that covers its item."""


@dataclass(frozen=True)
class AttachmentGrant:
    """Permission, for one task, to read the attachments of some items of one library.

    Attributes:
        task_key: the task the grant is for (it is recorded with what the task writes).
        library_id: the library whose items it covers.
        item_keys: the item keys it covers; None = every item of that library.
    """

    task_key: str
    library_id: str
    item_keys: frozenset[str] | None

    @classmethod
    def every_item(cls, task_key: str, library_id: str) -> AttachmentGrant:
        """A grant for every item of one library (the user said "read my PDFs" for this task)."""
        return cls(task_key, library_id, None)

    def covers(self, library_id: str, item_key: str) -> bool:
        return library_id == self.library_id and (self.item_keys is None or item_key in self.item_keys)


def require_grant(item: Item, grant: AttachmentGrant | None) -> AttachmentGrant:
    """The grant, when it covers `item`; else AttachmentNotAuthorised naming the item and the fix."""
    what = f"item {item.ref.library_id}/{item.ref.item_key} ({item.title[:60]!r})"
    if grant is None:
        raise AttachmentNotAuthorised(f"reading the attachments of {what} needs an AttachmentGrant for this task; "
                                      "pass grant=AttachmentGrant(task_key, library_id, item_keys) (or "
                                      "--read-attachments on the command line)")
    if not grant.covers(*item.ref.key):
        raise AttachmentNotAuthorised(f"the grant of task {grant.task_key!r} (library {grant.library_id}) does not "
                                      f"cover {what}; add its key to the grant's item_keys")
    return grant


def html_to_text(html: str) -> str:
    """Visible text of an HTML page or snapshot, blocks on their own lines.

    >>> html_to_text("<html><head><title>t</title></head><body><p>One.</p><script>x()</script><p>Two.</p></body>")
    'One.\\nTwo.'
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    lines = (re.sub(r"\s+", " ", line).strip() for line in soup.get_text("\n").splitlines())
    return "\n".join(line for line in lines if line)


def _read_pdf(path: Path) -> list[str]:
    from pypdf import PdfReader

    try:
        return [page.extract_text() or "" for page in PdfReader(path).pages]
    except Exception as exc:  # pypdf raises many types on broken files
        raise KnowledgeError(f"{path}: unreadable PDF ({type(exc).__name__}: {exc}); re-export or replace it") from None


def read_attachment(item: Item, attachment: Attachment, grant: AttachmentGrant | None) -> list[str]:
    """The text of one attachment of `item`, one string per page (one page for text and HTML files).

    Raises:
        AttachmentNotAuthorised: `grant` is None or does not cover the item.
        KnowledgeError: the file is missing, of a kind that cannot be read, or broken.
    """
    require_grant(item, grant)
    if attachment not in item.attachments:
        raise KnowledgeError(f"{attachment.path} is not an attachment of item {item.ref}")
    path = attachment.path
    if path is None or not path.is_file():
        raise KnowledgeError(f"attachment {attachment.key or attachment.title!r} of item {item.ref}: file "
                             f"{path or '(no local file)'} not found; point the import at the attachment folder")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _read_pdf(path)
    if suffix in TEXT_SUFFIXES | HTML_SUFFIXES:
        with path.open("rb") as fh:  # read-only, whatever the file's permissions
            text = fh.read().decode("utf-8", errors="replace")
        return [html_to_text(text) if suffix in HTML_SUFFIXES else text]
    raise KnowledgeError(f"{path}: cannot read {suffix or 'suffix-less'} attachments; expected one of "
                         f"{', '.join(sorted(READABLE_SUFFIXES))}")


def readable_attachments(item: Item) -> list[Attachment]:
    """The item's attachments that exist on disk and have a readable suffix, PDFs first."""
    found = [a for a in item.attachments if a.path is not None and a.path.suffix.lower() in READABLE_SUFFIXES
             and a.path.is_file()]
    return sorted(found, key=lambda a: a.path.suffix.lower() != ".pdf")


def files_for_key(folder: Path | None, key: str) -> tuple[Attachment, ...]:
    """Attachments found for `key` in an attachment folder: `<folder>/<key>.*` and every file in `<folder>/<key>/`.

    >>> files_for_key(None, "smith2020")
    ()
    """
    if folder is None or not key:
        return ()
    folder = Path(folder)
    paths = sorted(p for p in folder.glob(f"{glob_escape(key)}.*") if p.is_file())
    if (folder / key).is_dir():
        paths += sorted(p for p in (folder / key).rglob("*") if p.is_file() and not p.name.startswith("."))
    return tuple(Attachment(p, title=p.name) for p in paths)


def glob_escape(text: str) -> str:
    """`text` with glob's special characters escaped.

    >>> glob_escape("a[1]*")
    'a[[]1[]][*]'
    """
    return re.sub(r"([*?\[\]])", r"[\1]", text)
