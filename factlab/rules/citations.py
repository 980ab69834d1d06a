"""Citation checks: does the work a claim cites exist among the sources, and does that work support the claim?

Two separate questions, because generated reports fail them separately ("citation splicing": a real
paper cited for something it never says):

- identity exists: the cited work (DOI, title, or first author + year) is found in the ingested
  sources' metadata (`doi`, `title`, `author`, `year`), by the citation model of factlab.matching.citations
  (the one the knowledge layer resolves citations with);
- content supports: a judged snippet OF THAT SOURCE has relation `support`.

>>> sources = [{"source_id": "smith-2019", "title": "Aspirin", "author": "Smith, J.", "year": 2019}]
>>> check = check_citation("Smith et al. (2019)", sources, [])
>>> (check.identity_exists, check.content_supports, check.matched_source_id, check.ok)
(True, False, 'smith-2019', False)
>>> check_citation("Smith et al. (2018)", sources, []).reason
'no source matches the cited author+year'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from factlab.matching.citations import CitationMention, find_citations, identity_matches, parse_citation, work_field
from factlab.rules.business import JudgedEvidence


@dataclass
class CitationCheck:
    """Result of checking one cited work against the sources and the judged evidence."""

    cited: str
    identity_exists: bool
    content_supports: bool
    matched_source_id: str | None
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CitationCheck:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"CitationCheck: unknown field(s) {unknown}; expected {sorted(names)}")
        return cls(**data)

    @property
    def ok(self) -> bool:
        return self.identity_exists and self.content_supports


def check_citation(
    cited: str, sources: Iterable[Any], evidence_judgments: Iterable[JudgedEvidence]
) -> CitationCheck:
    """Check one cited work: does it exist among the sources, and does a snippet of it support the claim?

    Args:
        cited: the citation as written: "Smith et al. (2019)", "(Lee, 2017)", a DOI, "张三等（2020）",
            "《title》" or a bare title.
        sources: source records (dicts or objects) with `source_id` and optional `title`, `author`,
            `year`, `doi` (the source record of datasets/README.md).
        evidence_judgments: the claim's judged evidence.

    Returns:
        CitationCheck; `matched_source_id` is the matching source whose snippet supports the claim if
        any, else the first matching source, else None.
    """
    return _check_mention(cited, parse_citation(cited), sources, evidence_judgments)


def _check_mention(
    cited: str, mention: CitationMention, sources: Iterable[Any], evidence_judgments: Iterable[JudgedEvidence]
) -> CitationCheck:
    matched = [str(work_field(s, "source_id")) for s in sources if identity_matches(mention, s)]
    if not matched:
        return CitationCheck(cited, False, False, None, f"no source matches the cited {mention.kind.replace('_', '+')}")
    supporting = {j.evidence.source_id for j in evidence_judgments if j.relation == "support"}
    for source_id in matched:
        if source_id in supporting:
            return CitationCheck(cited, True, True, source_id, f"{source_id} has a snippet supporting the claim")
    return CitationCheck(
        cited, True, False, matched[0], f"{', '.join(matched)} found, but none of its snippets supports the claim"
    )


def check_claim_citations(
    text: str, sources: Iterable[Any], evidence_judgments: Iterable[JudgedEvidence]
) -> list[CitationCheck]:
    """Find every citation in `text` and check each (see `check_citation`)."""
    sources, judged = list(sources), list(evidence_judgments)
    return [_check_mention(m.text, m, sources, judged) for m in find_citations(text)]


def claim_citation(text: str, sentence: str, sources: Sequence[Any], judged: Sequence[JudgedEvidence]
                   ) -> CitationCheck | None:
    """The check of a claim's citation: the works cited in the claim (or, if it cites none, in its source sentence),
    the worst check first (a missing work before an unsupported one); None when neither cites anything."""
    checks = check_claim_citations(text, sources, judged) or check_claim_citations(sentence, sources, judged)
    if not checks:
        return None
    return min(checks, key=lambda c: (c.identity_exists, c.content_supports))
