"""Business rules: turn the judge's per-snippet relations into one label, risk level and reviewer hints.

The judge only decides the RELATION of a claim to each snippet; everything else is decided here,
deterministically, from tiers, counts, confidences and the claim's vertical. One `BusinessRules` per
`conf/business/<name>.yaml` (Hydra `_target_`), so a deployment swaps rules with `business=medical`.

Decision order (each step can only keep or downgrade the label):

1. Support / partial support below `min_confidence` is ignored (with a hint); so is a support / partial support
   that the snippet's own words do not back (a judge steered by text inside the snippet, or guessing, is not
   evidence): in the claim's language, fewer than `min_support_overlap` of the claim's content words (CJK
   bigrams) occur in it; across languages, it states none of the claim's numbers; and a snippet that holds
   instruction-like text (`factlab.untrusted.is_steering`: it addresses the model) never supports anything: a
   model that read it may have been steered, and the rules do not follow instructions. A contradiction from
   `weak` evidence (retrieved below `retrieval.search.strong_relevance`: barely about the claim) is ignored with a
   hint unless `weak_contradicts`: a snippet that is hardly about the claim never makes it `wrong` or `disputed`.
2. No support / partial / contradict left -> `unverifiable` (never `wrong`).
3. The decision is taken at the best (lowest-number) tier holding a decisive judgment: support and
   contradict there -> `disputed`; contradict -> `wrong`; support -> `correct`; only partial -> `disputed`.
   A disagreeing judgment at a lower tier only adds a hint (and turns a `correct` blue).
4. Fewer than `min_evidence` decisive snippets -> `unverifiable`.
5. `correct` needs its support at tier <= `min_support_tier`, or support from at least
   `corroboration_min_domains` distinct domains; otherwise `unverifiable`. A `correct` whose every support is a
   page fetched from the web at the open-web tier (a domain the authority tables do not rank: anyone can write
   there) needs support from at least `web_min_domains` distinct domains; otherwise `unverifiable` with
   `review=True`: one page written by anyone, whatever it says to the judge, never makes a claim `correct`.
6. In a high-risk vertical a `wrong` whose contradiction is below `contradict_min_confidence` becomes
   `unverifiable` with `review=True` (it goes to the review queue instead of being shown as an error).
7. A cited work that is missing from the sources, or none of whose snippets supports the claim
   (factlab/rules/citations.py), raises the risk to at least `risk.citation_mismatch`, with a hint.

This module and citations.py hold the whole label policy; the cards only show what it decided.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from factlab.matching.text import content_containment, numbers
from factlab.schema import LABELS, RELATIONS, RISK_LEVELS, Evidence, Judgment, detect_language
from factlab.untrusted import OPEN_WEB_TIER, from_the_network, is_steering

if TYPE_CHECKING:
    from factlab.rules.citations import CitationCheck

DECISIVE_RELATIONS: tuple[str, ...] = ("support", "partial_support", "contradict")
# Keys of `BusinessRules.risk`: the label plus the situations that shift its risk.
RISK_KEYS: tuple[str, ...] = (
    "correct", "correct_with_conflict", "disputed", "wrong", "unverifiable", "unverifiable_flagged",
    "citation_mismatch",
)
_RISK_RANK = {level: rank for rank, level in enumerate(reversed(RISK_LEVELS))}  # none=0 .. red=3


def max_risk(*levels: str) -> str:
    """Return the riskiest of the given risk levels (red > yellow > blue > none); "none" when given none.

    >>> max_risk("blue", "red", "none")
    'red'
    >>> max_risk()
    'none'
    """
    for level in levels:
        if level not in _RISK_RANK:
            raise ValueError(f"unknown risk level {level!r}; expected one of {', '.join(RISK_LEVELS)}")
    return max(levels, key=_RISK_RANK.__getitem__, default="none")


def risk_rank(level: str) -> int:
    """Sort key for risk levels: 3 for red down to 0 for none.

    >>> sorted(["none", "red", "blue"], key=risk_rank, reverse=True)
    ['red', 'blue', 'none']
    """
    if level not in _RISK_RANK:
        raise ValueError(f"unknown risk level {level!r}; expected one of {', '.join(RISK_LEVELS)}")
    return _RISK_RANK[level]


def normalise_domain(domain: str) -> str:
    """Lower-case a domain and drop a scheme, a leading "www." and any path, so mirrors count once.

    >>> normalise_domain("https://WWW.Who.int/news/1")
    'who.int'
    >>> normalise_domain("")
    ''
    """
    domain = domain.strip().lower()
    domain = domain.split("://", 1)[-1].split("/", 1)[0]
    return domain.removeprefix("www.")


def _support_domains(items: Iterable[JudgedEvidence]) -> list[str]:
    """The distinct normalised domains (own domain + `corroborated_by`) of the supporting snippets, sorted."""
    return sorted({normalise_domain(d) for i in items if i.relation == "support"
                   for d in [i.evidence.domain, *i.evidence.corroborated_by] if normalise_domain(d)})


@dataclass(frozen=True)
class JudgedEvidence:
    """One evidence snippet together with the judge's verdict on it."""

    evidence: Evidence
    judgment: Judgment

    @property
    def relation(self) -> str:
        return self.judgment.relation

    @property
    def confidence(self) -> float:
        return self.judgment.confidence

    @property
    def tier(self) -> int:
        return self.evidence.tier

    def where(self) -> str:
        """Short human reference: domain (or source id), tier and chunk."""
        name = self.evidence.domain or self.evidence.source_id
        return f"{name} (tier {self.evidence.tier}, {self.evidence.chunk_id})"


@dataclass
class RuleDecision:
    """The rules' verdict on one claim."""

    label: str
    relation: str
    confidence: float
    risk_level: str
    hints: list[str] = field(default_factory=list)  # for the reviewer: what to look at
    review: bool = False  # True: put the claim in the review queue
    reasons: list[str] = field(default_factory=list)  # audit trail: which rule fired
    tier: int | None = None  # the tier the decision was taken at; None without decisive evidence

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"RuleDecision.label {self.label!r} is not one of {', '.join(LABELS)}")
        if self.relation not in RELATIONS:
            raise ValueError(f"RuleDecision.relation {self.relation!r} is not one of {', '.join(RELATIONS)}")
        if self.risk_level not in RISK_LEVELS:
            raise ValueError(f"RuleDecision.risk_level {self.risk_level!r} is not one of {', '.join(RISK_LEVELS)}")

    def to_dict(self) -> dict:
        return asdict(self)


def _as_judged(item: JudgedEvidence | tuple[Evidence, Judgment], index: int) -> JudgedEvidence:
    if isinstance(item, JudgedEvidence):
        judged = item
    elif isinstance(item, tuple) and len(item) == 2:
        judged = JudgedEvidence(*item)
    else:
        raise TypeError(
            f"judged evidence #{index}: expected JudgedEvidence or an (Evidence, Judgment) pair, "
            f"got {type(item).__name__}"
        )
    tier = judged.evidence.tier
    if isinstance(tier, bool) or not isinstance(tier, int) or tier < 1:
        raise ValueError(
            f"evidence {judged.evidence.chunk_id!r}: tier must be an int >= 1 (1 = most authoritative), got {tier!r}"
        )
    return judged


@dataclass
class BusinessRules:
    """Business knobs of the label rules; one instance per `conf/business/<name>.yaml`.

    Field meanings are commented in `conf/business/default.yaml`. All fields are required: the
    defaults live in YAML, not here.
    """

    name: str
    min_support_tier: int
    min_evidence: int
    corroboration_min_domains: int
    web_min_domains: int
    high_risk_verticals: list[str]
    contradict_min_confidence: float
    min_confidence: float
    min_support_overlap: float
    weak_contradicts: bool
    risk: dict[str, str]

    def __post_init__(self) -> None:
        where = f"business {self.name!r} (conf/business/{self.name}.yaml)"
        self.high_risk_verticals = [str(v) for v in self.high_risk_verticals]
        self.risk = {str(k): str(v) for k, v in dict(self.risk).items()}
        if not isinstance(self.weak_contradicts, bool):
            raise ValueError(f"{where}: field weak_contradicts must be true or false, got {self.weak_contradicts!r}")
        for name in ("min_support_tier", "min_evidence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}: field {name} must be an int >= 1, got {value!r}")
        for name in ("corroboration_min_domains", "web_min_domains"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{where}: field {name} must be an int >= 0 (0 = off), got {value!r}")
        for name in ("contradict_min_confidence", "min_confidence", "min_support_overlap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{where}: field {name} must be a number in [0, 1], got {value!r}")
        missing = [k for k in RISK_KEYS if k not in self.risk]
        extra = [k for k in self.risk if k not in RISK_KEYS]
        if missing or extra:
            raise ValueError(
                f"{where}: field risk must have exactly the keys {', '.join(RISK_KEYS)}; "
                f"missing {missing or 'none'}, unexpected {extra or 'none'}"
            )
        for key, level in self.risk.items():
            if level not in RISK_LEVELS:
                raise ValueError(f"{where}: risk.{key} is {level!r}; expected one of {', '.join(RISK_LEVELS)}")

    def is_high_risk(self, vertical: str) -> bool:
        return vertical in self.high_risk_verticals

    def risk_for(self, label: str, *, review: bool, high_risk: bool, conflict: bool) -> str:
        """Risk level of a final label: the config's `risk` mapping, shifted by review / vertical / conflict."""
        if label == "correct":
            return self.risk["correct_with_conflict" if conflict else "correct"]
        if label == "unverifiable":
            return self.risk["unverifiable_flagged" if (review or high_risk) else "unverifiable"]
        return self.risk[label]

    def decide(
        self,
        vertical: str,
        judged: Iterable[JudgedEvidence | tuple[Evidence, Judgment]],
        citation: CitationCheck | None = None,
        claim: str | None = None,
    ) -> RuleDecision:
        """Decide the label of one claim from its judged evidence (steps 1-6) and its citation check (step 7).

        Args:
            vertical: the claim's vertical (e.g. "medical"); only `high_risk_verticals` membership matters.
            judged: every snippet the judge saw for this claim, with its judgment.
            citation: the check of the work the claim cites (factlab.rules.citations.claim_citation); None when it
                cites none.
            claim: the claim's text, for the support-backing check of step 1; None skips that check.

        Returns:
            The RuleDecision: label, aggregated relation, its confidence, risk level, hints, review flag
            and the reasons (which rules fired).
        """
        decision = self._decide_on_evidence(vertical, [_as_judged(item, i) for i, item in enumerate(judged)], claim)
        if citation is not None and not citation.ok:  # 7. a cited work that is missing or silent raises the risk
            decision.hints.append(f"citation {citation.cited!r}: {citation.reason}")
            floor = self.risk["citation_mismatch"]
            decision.reasons.append(f"citation_mismatch: {citation.cited!r} -> risk >= {floor}")
            decision.risk_level = max_risk(decision.risk_level, floor)
        return decision

    def _decide_on_evidence(self, vertical: str, items: list[JudgedEvidence], claim: str | None) -> RuleDecision:
        high_risk = self.is_high_risk(vertical)
        hints: list[str] = []
        reasons: list[str] = []
        decisive = self._decisive(items, hints, reasons, claim)
        if not decisive:
            return self._no_decisive_evidence(items, hints, reasons, high_risk)
        label, relation, best_tier, confidence = self._at_best_tier(decisive, reasons)
        conflict = self._lower_tier_conflicts(label, relation, best_tier, decisive, hints)
        finish = {"hints": hints, "reasons": reasons, "high_risk": high_risk}

        n_decisive = len({i.evidence.chunk_id for i in decisive})
        if n_decisive < self.min_evidence:  # 4.
            hints.append(
                f"only {n_decisive} decisive snippet(s); business {self.name!r} needs >= {self.min_evidence}: "
                "find more evidence"
            )
            reasons.append(f"min_evidence: {n_decisive} < {self.min_evidence} -> unverifiable (was {label})")
            return self._finish("unverifiable", relation, confidence, best_tier, **finish)
        if label == "correct" and best_tier > self.min_support_tier and not self._corroborated(best_tier, decisive,
                                                                                               hints, reasons):  # 5.
            return self._finish("unverifiable", relation, confidence, best_tier, **finish)
        if label == "correct" and not self._web_corroborated(decisive, hints, reasons):  # 5.
            return self._finish("unverifiable", relation, confidence, best_tier, **finish, review=True)
        if label == "wrong" and high_risk and confidence < self.contradict_min_confidence:  # 6.
            hints.append(
                f"contradiction at confidence {confidence:.2f} < {self.contradict_min_confidence:.2f} in high-risk "
                f"vertical {vertical!r}: confirm by hand before calling the claim wrong"
            )
            reasons.append("contradict_min_confidence: weak contradiction in a high-risk vertical -> review")
            return self._finish("unverifiable", relation, confidence, best_tier, **finish, review=True)
        return self._finish(label, relation, confidence, best_tier, **finish, conflict=conflict)

    def _decisive(self, items: list[JudgedEvidence], hints: list[str], reasons: list[str],
                  claim: str | None) -> list[JudgedEvidence]:
        """1. The support / partial / contradict judgments; weak or unbacked support and partial support dropped
        (with a hint)."""
        decisive = []
        for item in items:
            if item.relation not in DECISIVE_RELATIONS:
                continue
            if item.relation == "contradict" and item.evidence.weak and not self.weak_contradicts:
                hints.append(f"ignored contradict from {item.where()}: the snippet is barely about the claim "
                             f"(relevance {item.evidence.score:.2f}, below retrieval.search.strong_relevance)")
                reasons.append(f"weak_contradicts: {item.evidence.chunk_id} contradict on weak evidence ignored")
                continue
            if item.relation != "contradict" and item.confidence < self.min_confidence:
                hints.append(
                    f"ignored weak {item.relation} from {item.where()}: confidence {item.confidence:.2f} "
                    f"< min_confidence {self.min_confidence:.2f}"
                )
                continue
            unbacked = self._unbacked(claim, item.evidence.text) if item.relation != "contradict" else None
            if unbacked:
                hints.append(f"distrusted {item.relation} from {item.where()}: {unbacked}; read the snippet yourself")
                reasons.append(f"min_support_overlap: {item.evidence.chunk_id} {item.relation} not backed ({unbacked})")
                continue
            decisive.append(item)
        return decisive

    def _unbacked(self, claim: str | None, snippet: str) -> str | None:
        """Why the snippet's words do not back a support of `claim`, or None when they do (or there is no claim)."""
        if is_steering(snippet):
            return "it holds instruction-like text addressed to the model (factlab.untrusted), so it backs nothing"
        if claim is None:
            return None
        if detect_language(claim) == detect_language(snippet):
            overlap = content_containment(claim, snippet)
            if overlap < self.min_support_overlap:
                return (f"it holds {overlap:.0%} of the claim's content words "
                        f"(min_support_overlap {self.min_support_overlap:.0%})")
            return None
        stated = numbers(claim)
        if stated and not stated & numbers(snippet):
            return f"it states none of the claim's numbers ({', '.join(sorted(stated))})"
        return None

    def _no_decisive_evidence(self, items: list[JudgedEvidence], hints: list[str], reasons: list[str],
                              high_risk: bool) -> RuleDecision:
        """2. Nothing decisive: unverifiable, never wrong."""
        relation = "irrelevant" if items and all(i.relation == "irrelevant" for i in items) else "insufficient"
        confidence = max((i.confidence for i in items if i.relation == relation), default=0.0)
        if items:
            reasons.append(f"no support / partial / contradict judgment among {len(items)} snippet(s)")
            hints.append("evidence found is not conclusive: look for a source that states or denies the claim")
        else:
            reasons.append("no evidence retrieved")
            hints.append("no evidence found: look for a primary source")
        return self._finish("unverifiable", relation, confidence, None, hints, reasons, high_risk=high_risk)

    @staticmethod
    def _at_best_tier(decisive: list[JudgedEvidence], reasons: list[str]) -> tuple[str, str, int, float]:
        """3. The label, relation and confidence at the best (lowest-number) tier holding a decisive judgment."""
        best_tier = min(i.tier for i in decisive)
        top = [i for i in decisive if i.tier == best_tier]
        top_relations = {i.relation for i in top}
        if "support" in top_relations and "contradict" in top_relations:
            label, relation = "disputed", "contradict"
            reasons.append(f"support and contradict at tier {best_tier}")
        elif "contradict" in top_relations:
            label, relation = "wrong", "contradict"
            reasons.append(f"contradict at tier {best_tier} with no support at that tier")
        elif "support" in top_relations:
            label, relation = "correct", "support"
            reasons.append(f"support at tier {best_tier} with no contradict at that tier")
        else:
            label, relation = "disputed", "partial_support"
            reasons.append(f"only partial support at tier {best_tier}")
        return label, relation, best_tier, max(i.confidence for i in top if i.relation == relation)

    @staticmethod
    def _lower_tier_conflicts(label: str, relation: str, best_tier: int, decisive: list[JudgedEvidence],
                              hints: list[str]) -> bool:
        """3. A lower-tier judgment disagreeing with a correct / wrong only adds a hint; True when there is one."""
        if label not in ("correct", "wrong"):
            return False
        opposite = {"support": ("contradict",), "contradict": ("support", "partial_support")}[relation]
        conflict = False
        for item in decisive:
            if item.tier > best_tier and item.relation in opposite:
                conflict = True
                verb = "contradicts" if item.relation == "contradict" else "supports"
                hints.append(f"lower-tier conflict: {item.where()} {verb} the claim; decided on tier {best_tier}")
        return conflict

    def _corroborated(self, best_tier: int, decisive: list[JudgedEvidence], hints: list[str],
                      reasons: list[str]) -> bool:
        """5. Support below `min_support_tier` passes only with enough distinct supporting domains."""
        domains = _support_domains(decisive)
        needed = self.corroboration_min_domains
        if needed and len(domains) >= needed:
            reasons.append(
                f"support only at tier {best_tier} > min_support_tier {self.min_support_tier}, "
                f"accepted: corroborated by {len(domains)} domains ({', '.join(domains)}) >= {needed}"
            )
            return True
        alternative = f" or support from >= {needed} distinct domains (found {len(domains)})" if needed else ""
        hints.append(
            f"support only from tier {best_tier}; business {self.name!r} needs tier <= "
            f"{self.min_support_tier}{alternative}: find a more authoritative source"
        )
        reasons.append(f"min_support_tier: support at tier {best_tier} > {self.min_support_tier} -> unverifiable")
        return False

    def _web_corroborated(self, decisive: list[JudgedEvidence], hints: list[str], reasons: list[str]) -> bool:
        """5. Support only from open-web pages (fetched, tier >= OPEN_WEB_TIER) passes only from enough domains."""
        support = [i for i in decisive if i.relation == "support"]
        needed = self.web_min_domains
        if not needed or any(not from_the_network(i.evidence.source_id) or i.tier < OPEN_WEB_TIER for i in support):
            return True
        domains = _support_domains(support)
        if len(domains) >= needed:
            reasons.append(f"web_min_domains: open-web support from {len(domains)} domains ({', '.join(domains)}) "
                           f">= {needed}")
            return True
        hints.append(
            f"supported only by {len(support)} open-web page(s) from {len(domains)} domain(s) "
            f"({', '.join(domains) or 'none named'}); business {self.name!r} needs >= {needed} independent domains or "
            "a ranked source: read the page yourself (anyone can write there, and a page can address the judge)"
        )
        reasons.append(f"web_min_domains: open-web support from {len(domains)} < {needed} domains -> unverifiable, "
                       "review")
        return False

    def _finish(
        self,
        label: str,
        relation: str,
        confidence: float,
        tier: int | None,
        hints: list[str],
        reasons: list[str],
        *,
        high_risk: bool,
        review: bool = False,
        conflict: bool = False,
    ) -> RuleDecision:
        return RuleDecision(
            label=label,
            relation=relation,
            confidence=round(float(confidence), 4),
            risk_level=self.risk_for(label, review=review, high_risk=high_risk, conflict=conflict),
            hints=hints,
            review=review,
            reasons=reasons,
            tier=tier,
        )

