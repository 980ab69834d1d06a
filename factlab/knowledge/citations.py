"""Citation checks keep two questions apart: does the cited source EXIST (its identity is found in the library), and
does it SUPPORT the sentence (content; the relation comes from the checker, this module judges nothing).

A citation is resolved by key (item key or BibTeX citation key, `[@key]` accepted), then by the citation model the
checker's rules use (factlab.matching.citations): a DOI names the item with that DOI, an arXiv id the item with that
id (items only: the checker's source records carry none), authors + year the item of that exact year whose first
author is the first cited author, a title the item whose normalised title equals or contains it. An item is matched
on the fields of the source record it becomes (factlab.knowledge.sources.work_record), so the library resolves a
citation exactly as the checker would. Several matches keep the first and name the others as candidates.

>>> citation_text("[@smith2020]"), citation_text(" https://doi.org/10.1/X "), citation_text("@lee2017")
('smith2020', 'https://doi.org/10.1/X', 'lee2017')
>>> CitationCheck("Rates fell.", "lee2020", None, None, "support").status
'missing'
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from factlab.knowledge.identity import arxiv_id, item_arxiv_id
from factlab.knowledge.items import Item, ItemRef, KnowledgeError
from factlab.knowledge.sources import work_record
from factlab.knowledge.store import NoteStore, Upsert
from factlab.matching.citations import CitationMention, identity_matches, parse_citation
from factlab.schema import normalise_relation

CHECKED_TAG = "factlab/checked"


def citation_text(citation: str) -> str:
    """The citation without Pandoc brackets and `@`, and without surrounding space."""
    text = citation.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    return text.removeprefix("@")


@dataclass(frozen=True)
class Resolution:
    """Which item a citation names: `item` None when the library has none; `matched_by` key, doi, arxiv, author_year
    or title; `candidates` the other items that matched as well."""

    citation: str
    item: Item | None
    matched_by: str | None
    candidates: tuple[ItemRef, ...] = ()


def _named(items: list[Item], mention: CitationMention) -> list[Item]:
    return [item for item in items if identity_matches(mention, work_record(item))]


def resolve_citation(items: Iterable[Item], citation: str) -> Resolution:
    """Find the item a citation names.

    Args:
        items: a Library or any items.
        citation: a key (`smith2020`, `[@smith2020]`, a Zotero item key), a DOI (bare, `doi:` or a doi.org URL),
            an arXiv id (`arXiv:2101.00001`), authors and year (`Smith et al. (2019)`, `Lee, 2017`,
            `张三等（2020）`) or a title (`《title》` or bare).

    Returns:
        The resolution; `matched_by` is key, doi, arxiv, author_year or title.
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
    mention = parse_citation(text)
    if mention.kind == "doi" and (result := found(_named(items, mention), "doi")):
        return result
    if (arxiv := arxiv_id(text)) and (result := found([i for i in items if item_arxiv_id(i) == arxiv], "arxiv")):
        return result
    if mention.kind != "doi" and (result := found(_named(items, mention), mention.kind)):
        return result
    return Resolution(citation, None, None)


@dataclass(frozen=True)
class CitationCheck:
    """One cited sentence: whether the cited source exists in the library, and, apart from that, the checker's
    relation between that source and the sentence.

    Attributes:
        sentence: the citing sentence.
        citation: the citation as written.
        item: the cited item when the library has it (None: it does not exist there).
        matched_by: how it was found (key, doi, arxiv, author_year, title).
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
        """The source supports the sentence: it exists and the relation is `support` (as in the checker's rules, a
        source that is not there supports nothing); None when a found source is not judged."""
        if not self.exists:
            return False
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
    """Resolve `citation` in the library and record the checker's `relation` for it beside that: a missing source
    keeps its relation but supports nothing, and a found source is not thereby "supported"."""
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
