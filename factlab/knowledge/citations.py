"""Citation checks keep two questions apart: does the cited source EXIST (its identity is found in the library), and
does it SUPPORT the sentence (content; the relation comes from the checker, this module judges nothing).

A citation is resolved by key (item key or BibTeX citation key, `[@key]` accepted), DOI, arXiv id or title, in that
order of precedence; several matches keep the first and name the others as candidates.

>>> citation_text("[@smith2020]"), citation_text(" https://doi.org/10.1/X "), citation_text("doi:10.1/x")
('smith2020', 'https://doi.org/10.1/X', '10.1/x')
>>> CitationCheck("Rates fell.", "lee2020", None, None, "support").status
'missing'
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from factlab.knowledge.identity import arxiv_id, item_arxiv_id, normalise_doi, normalise_title
from factlab.knowledge.items import Item, ItemRef, KnowledgeError
from factlab.knowledge.store import NoteStore, Upsert
from factlab.matching.text import similarity
from factlab.schema import normalise_relation

_DOI_IN = re.compile(r"10\.\d{4,9}/\S+")
CHECKED_TAG = "factlab/checked"


def citation_text(citation: str) -> str:
    """The citation without Pandoc brackets and `@`, or a leading `doi:`, and without surrounding space."""
    text = citation.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    text = text.removeprefix("@")
    return re.sub(r"^doi:\s*", "", text, flags=re.I)


@dataclass(frozen=True)
class Resolution:
    """Which item a citation names: `item` None when the library has none; `matched_by` key, doi, arxiv or title;
    `candidates` the other items that matched as well."""

    citation: str
    item: Item | None
    matched_by: str | None
    candidates: tuple[ItemRef, ...] = ()


def resolve_citation(items: Iterable[Item], citation: str, min_title: float = 0.9) -> Resolution:
    """Find the item a citation names.

    Args:
        items: a Library or any items.
        citation: a key (`smith2020`, `[@smith2020]`, a Zotero item key), a DOI (bare, `doi:` or a doi.org URL),
            an arXiv id (`arXiv:2101.00001`) or a title.
        min_title: similarity of normalised titles that counts as the same title (0.9: punctuation and a word).
    """
    items = list(items)
    text = citation_text(citation)
    if not text:
        raise KnowledgeError(f"citation {citation!r} is empty; pass a key, DOI or title")

    def found(matches: list[Item], how: str) -> Resolution | None:
        if not matches:
            return None
        return Resolution(citation, matches[0], how, tuple(m.ref for m in matches[1:]))

    by_key = [i for i in items if text in (i.ref.item_key, i.citation_key)] or [
        i for i in items if text.lower() in (i.ref.item_key.lower(), i.citation_key.lower())]
    if result := found(by_key, "key"):
        return result
    if doi_match := _DOI_IN.search(text):
        doi = normalise_doi(doi_match.group())
        if result := found([i for i in items if i.doi and normalise_doi(i.doi) == doi], "doi"):
            return result
    if (arxiv := arxiv_id(text)) and (result := found([i for i in items if item_arxiv_id(i) == arxiv], "arxiv")):
        return result
    title = normalise_title(text)
    scored = sorted(((1.0 if normalise_title(i.title) == title else similarity(title, normalise_title(i.title)), n)
                     for n, i in enumerate(items) if i.title), key=lambda pair: (-pair[0], pair[1]))
    matches = [items[n] for score, n in scored if score >= min_title]
    return found(matches, "title") or Resolution(citation, None, None)


@dataclass(frozen=True)
class CitationCheck:
    """One cited sentence: whether the cited source exists in the library, and, apart from that, the checker's
    relation between that source and the sentence.

    Attributes:
        sentence: the citing sentence.
        citation: the citation as written.
        item: the cited item when the library has it (None: it does not exist there).
        matched_by: how it was found (key, doi, arxiv, title).
        relation: the checker's relation (factlab.schema.RELATIONS); None = not judged.
    """

    sentence: str
    citation: str
    item: ItemRef | None
    matched_by: str | None
    relation: str | None

    @property
    def exists(self) -> bool:
        """The cited source's identity is in the library."""
        return self.item is not None

    @property
    def supports(self) -> bool | None:
        """The source supports the sentence (a `support` relation); None when not judged."""
        return None if self.relation is None else self.relation == "support"

    @property
    def status(self) -> str:
        """One word for a reviewer: missing, unjudged, supported, partial, contradicted or unsupported.

        >>> ref = ItemRef("zotero:1", "K", 1)
        >>> [CitationCheck("s", "c", ref, "key", r).status for r in (None, "support", "contradict", "insufficient")]
        ['unjudged', 'supported', 'contradicted', 'unsupported']
        """
        if not self.exists:
            return "missing"
        return {None: "unjudged", "support": "supported", "partial_support": "partial",
                "contradict": "contradicted"}.get(self.relation, "unsupported")


def check_citation(items: Iterable[Item], sentence: str, citation: str, relation: str | None = None) -> CitationCheck:
    """Resolve `citation` in the library and record the checker's `relation` for it beside that, unchanged in
    meaning: a missing source keeps its relation, and a found source is not thereby "supported"."""
    try:
        relation = normalise_relation(relation) if relation is not None else None
    except ValueError as exc:
        raise KnowledgeError(f"citation {citation!r} in {sentence[:60]!r}: {exc}") from None
    resolution = resolve_citation(items, citation)
    ref = resolution.item.ref if resolution.item is not None else None
    return CitationCheck(sentence, citation, ref, resolution.matched_by, relation)


def checks_note(task_key: str, checks: list[CitationCheck]) -> str:
    """The note body for one item's checks (Markdown).

    >>> ref = ItemRef("zotero:1", "K", 1)
    >>> print(checks_note("verify/r1", [CitationCheck("Rates fell.", "[@k]", ref, "key", "contradict")]))
    factlab verify/r1: 1 sentence cites this item.
    - "Rates fell." cites [@k]: found in the library (by key); the checker's relation: contradict -> contradicted
    """
    lines = [f"factlab {task_key}: {len(checks)} sentence{'s' if len(checks) != 1 else ''} cite"
             f"{'s' if len(checks) == 1 else ''} this item."]
    for check in checks:
        judged = f"the checker's relation: {check.relation}" if check.relation else "not judged"
        lines.append(f"- \"{check.sentence}\" cites {check.citation}: found in the library (by {check.matched_by}); "
                     f"{judged} -> {check.status}")
    return "\n".join(lines)


def record_checks(store: NoteStore, task_key: str, checks: list[CitationCheck]) -> tuple[list[Upsert],
                                                                                          list[CitationCheck]]:
    """Write one note per cited item for the task (idempotent, see NoteStore.upsert) and tag it `factlab/checked`.

    Returns:
        The upserts, and the checks whose source is missing from the library (they have no item to hang a note on;
        report them to the user).
    """
    by_item: dict[ItemRef, list[CitationCheck]] = defaultdict(list)
    missing = []
    for check in checks:
        (by_item[check.item] if check.exists else missing).append(check)
    upserts = []
    for ref, item_checks in by_item.items():
        data = {"checks": [{k: v for k, v in asdict(c).items() if k != "item"} | {"status": c.status}
                           for c in item_checks]}
        upserts.append(store.upsert(ref, task_key, checks_note(task_key, item_checks), data=data))
        store.add_tag(ref, CHECKED_TAG)
    return upserts, missing
