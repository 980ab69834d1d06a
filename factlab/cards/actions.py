"""The suggested action of a claim card: one short, concrete instruction for the reviewer, in the claim's language.

The texts are data, one YAML file per language (factlab/cards/actions/<lang>.yaml); this module only picks the text
for the card's label and evidence and fills it in.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import yaml

from factlab.cards.model import ClaimCard, EvidenceItem, excerpt
from factlab.schema import LANGUAGES

ACTIONS_DIR = Path(__file__).resolve().parent / "actions"


@functools.cache
def action_texts(lang: str) -> dict[str, str]:
    """The action texts of one language (factlab/cards/actions/<lang>.yaml).

    >>> action_texts("en")["error"]
    'Rerun / check manually: {reason}'
    """
    if lang not in LANGUAGES:
        raise ValueError(f"no action texts for language {lang!r}; expected one of {', '.join(LANGUAGES)}")
    return yaml.safe_load((ACTIONS_DIR / f"{lang}.yaml").read_text(encoding="utf-8"))
def _ref(item: EvidenceItem, words: Mapping[str, str]) -> str:
    key = "ref" if item.title else "ref_untitled"
    return words[key].format(title=item.title, source_id=item.source_id, page=item.page)


def _first(card: ClaimCard, relation: str) -> EvidenceItem | None:
    """The strongest snippet with `relation`: cards keep evidence best tier first, then by confidence."""
    return next((e for e in card.evidence if e.relation == relation), None)


def suggested_action(card: ClaimCard) -> str:
    """One short, concrete instruction for the reviewer, in the claim's language (Chinese or English).

    Args:
        card: a claim card with label, evidence (sorted as `build_claim_card` sorts it), review,
            error and citation filled in.

    Returns:
        The action, e.g. 'Check WHO report (who-2020) p.3: it contradicts the claim ("...")'.
    """
    words = action_texts(card.lang)
    if card.error:
        return words["error"].format(reason=card.error)
    if not card.checkworthy or card.label is None:
        return words["not_checkworthy"]
    support, contradict, partial = _first(card, "support"), _first(card, "contradict"), _first(card, "partial_support")
    citation = card.citation
    citation_action = None
    if citation is not None and not citation.ok:
        if citation.identity_exists:
            citation_action = words["citation_unsupported"].format(
                cited=citation.cited, source=citation.matched_source_id
            )
        else:
            citation_action = words["citation_missing"].format(cited=citation.cited)

    if card.label == "wrong" and contradict:
        return words["wrong"].format(ref=_ref(contradict, words), excerpt=excerpt(contradict.snippet))
    if card.label == "disputed":
        if support and contradict:
            return words["disputed_conflict"].format(support=_ref(support, words), contradict=_ref(contradict, words))
        if partial:
            return words["disputed_partial"].format(ref=_ref(partial, words), excerpt=excerpt(partial.snippet))
    if card.label == "unverifiable":
        if card.review and contradict:
            return words["review"].format(
                ref=_ref(contradict, words), excerpt=excerpt(contradict.snippet), confidence=contradict.confidence
            )
        if citation_action:
            return citation_action
        basis = support or partial or contradict
        if basis:
            return words["insufficient_basis"].format(
                ref=_ref(basis, words), tier=basis.tier, verb=words[basis.relation]
            )
        key = "inconclusive" if card.evidence else "no_evidence"
        return words[key].format(claim=excerpt(card.text))
    if card.label == "correct" and support:
        if citation_action:
            return citation_action
        lower = next((e for e in card.evidence if e.relation == "contradict" and e.tier > support.tier), None)
        if lower:
            return words["correct_conflict"].format(ref=_ref(support, words), other=_ref(lower, words))
        return words["correct"].format(ref=_ref(support, words))
    # Evidence inconsistent with the label (e.g. a card edited by hand): fall back to the generic search action.
    return words["no_evidence" if not card.evidence else "inconclusive"].format(claim=excerpt(card.text))


