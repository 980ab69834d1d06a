"""Business rules: turn the judge's per-snippet relations into one label, risk level and reviewer hints.

The judge only decides the RELATION of a claim to each snippet; everything else is decided here,
deterministically, from tiers, counts, confidences and the claim's vertical. One `BusinessRules` per
`conf/business/<name>.yaml` (Hydra `_target_`), so a deployment swaps rules with `business=medical`.

Decision order (each step can only keep or downgrade the label):

1. Support / partial support below `min_confidence` is ignored (with a hint).
2. No support / partial / contradict left -> `unverifiable` (never `wrong`).
3. The decision is taken at the best (lowest-number) tier holding a decisive judgment: support and
   contradict there -> `disputed`; contradict -> `wrong`; support -> `correct`; only partial -> `disputed`.
   A disagreeing judgment at a lower tier only adds a hint (and turns a `correct` blue).
4. Fewer than `min_evidence` decisive snippets -> `unverifiable`.
5. `correct` needs its support at tier <= `min_support_tier`, or support from at least
   `corroboration_min_domains` distinct domains; otherwise `unverifiable`.
6. In a high-risk vertical a `wrong` whose contradiction is below `contradict_min_confidence` becomes
   `unverifiable` with `review=True` (it goes to the review queue instead of being shown as an error).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from factlab.schema import LABELS, RELATIONS, RISK_LEVELS, Evidence, Judgment

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
    high_risk_verticals: list[str]
    contradict_min_confidence: float
    min_confidence: float
    risk: dict[str, str]

    def __post_init__(self) -> None:
        where = f"business {self.name!r} (conf/business/{self.name}.yaml)"
        self.high_risk_verticals = [str(v) for v in self.high_risk_verticals]
        self.risk = {str(k): str(v) for k, v in dict(self.risk).items()}
        for name in ("min_support_tier", "min_evidence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}: field {name} must be an int >= 1, got {value!r}")
        value = self.corroboration_min_domains
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where}: field corroboration_min_domains must be an int >= 0 (0 = off), got {value!r}")
        for name in ("contradict_min_confidence", "min_confidence"):
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
        self, vertical: str, judged: Iterable[JudgedEvidence | tuple[Evidence, Judgment]]
    ) -> RuleDecision:
        """Decide the label of one claim from its judged evidence.

        Args:
            vertical: the claim's vertical (e.g. "medical"); only `high_risk_verticals` membership matters.
            judged: every snippet the judge saw for this claim, with its judgment.

        Returns:
            The RuleDecision: label, aggregated relation, its confidence, risk level, hints, review flag
            and the reasons (which rules fired).
        """
        items = [_as_judged(item, i) for i, item in enumerate(judged)]
        high_risk = self.is_high_risk(vertical)
        hints: list[str] = []
        reasons: list[str] = []

        decisive: list[JudgedEvidence] = []
        for item in items:
            if item.relation not in DECISIVE_RELATIONS:
                continue
            if item.relation != "contradict" and item.confidence < self.min_confidence:
                hints.append(
                    f"ignored weak {item.relation} from {item.where()}: confidence {item.confidence:.2f} "
                    f"< min_confidence {self.min_confidence:.2f}"
                )
                continue
            decisive.append(item)

        if not decisive:
            relation = "irrelevant" if items and all(i.relation == "irrelevant" for i in items) else "insufficient"
            confidence = max((i.confidence for i in items if i.relation == relation), default=0.0)
            if items:
                reasons.append(f"no support / partial / contradict judgment among {len(items)} snippet(s)")
                hints.append("evidence found is not conclusive: look for a source that states or denies the claim")
            else:
                reasons.append("no evidence retrieved")
                hints.append("no evidence found: look for a primary source")
            return self._finish("unverifiable", relation, confidence, None, hints, reasons, high_risk=high_risk)

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
        confidence = max(i.confidence for i in top if i.relation == relation)

        opposite = {"support": ("contradict",), "contradict": ("support", "partial_support")}
        conflict = False
        if label in ("correct", "wrong"):
            for item in decisive:
                if item.tier > best_tier and item.relation in opposite[relation]:
                    conflict = True
                    verb = "contradicts" if item.relation == "contradict" else "supports"
                    hints.append(
                        f"lower-tier conflict: {item.where()} {verb} the claim; decided on tier {best_tier}"
                    )

        n_decisive = len({i.evidence.chunk_id for i in decisive})
        if n_decisive < self.min_evidence:
            hints.append(
                f"only {n_decisive} decisive snippet(s); business {self.name!r} needs >= {self.min_evidence}: "
                "find more evidence"
            )
            reasons.append(f"min_evidence: {n_decisive} < {self.min_evidence} -> unverifiable (was {label})")
            return self._finish("unverifiable", relation, confidence, best_tier, hints, reasons, high_risk=high_risk)

        if label == "correct" and best_tier > self.min_support_tier:
            domains = sorted(
                {
                    normalise_domain(d)
                    for i in decisive
                    if i.relation == "support"
                    for d in [i.evidence.domain, *i.evidence.corroborated_by]
                    if normalise_domain(d)
                }
            )
            needed = self.corroboration_min_domains
            if needed and len(domains) >= needed:
                reasons.append(
                    f"support only at tier {best_tier} > min_support_tier {self.min_support_tier}, "
                    f"accepted: corroborated by {len(domains)} domains ({', '.join(domains)}) >= {needed}"
                )
            else:
                alternative = f" or support from >= {needed} distinct domains (found {len(domains)})" if needed else ""
                hints.append(
                    f"support only from tier {best_tier}; business {self.name!r} needs tier <= "
                    f"{self.min_support_tier}{alternative}: find a more authoritative source"
                )
                reasons.append(
                    f"min_support_tier: support at tier {best_tier} > {self.min_support_tier} -> unverifiable"
                )
                return self._finish(
                    "unverifiable", relation, confidence, best_tier, hints, reasons, high_risk=high_risk
                )

        if label == "wrong" and high_risk and confidence < self.contradict_min_confidence:
            hints.append(
                f"contradiction at confidence {confidence:.2f} < {self.contradict_min_confidence:.2f} in high-risk "
                f"vertical {vertical!r}: confirm by hand before calling the claim wrong"
            )
            reasons.append("contradict_min_confidence: weak contradiction in a high-risk vertical -> review")
            return self._finish(
                "unverifiable", relation, confidence, best_tier, hints, reasons, high_risk=high_risk, review=True
            )

        return self._finish(label, relation, confidence, best_tier, hints, reasons, high_risk=high_risk,
                            conflict=conflict)

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

