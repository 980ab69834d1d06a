"""Shared vocabulary of factlab: relations, labels, risk levels and the records passed between stages.

Every module speaks these names; nothing else defines them.

>>> normalise_relation("Supports")
'support'
>>> normalise_relation("partial support")
'partial_support'
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field
from enum import StrEnum

# The judge decides only the RELATION of a claim to evidence.
RELATIONS: tuple[str, ...] = ("support", "partial_support", "contradict", "irrelevant", "insufficient")
# Deterministic rules turn relations + tiers + counts + vertical into the LABEL.
LABELS: tuple[str, ...] = ("correct", "wrong", "disputed", "unverifiable")
# Paragraph / claim risk shown to the reviewer; "none" means nothing to check.
RISK_LEVELS: tuple[str, ...] = ("red", "yellow", "blue", "none")
LANGUAGES: tuple[str, ...] = ("zh", "en")
DEFAULT_VERTICALS: tuple[str, ...] = (
    "general", "medical", "finance", "law", "science", "tech", "disaster", "sports", "entertainment",
)
HIGH_RISK_VERTICALS: tuple[str, ...] = ("medical", "law", "finance", "disaster")
# The logic layer's finding kinds (factlab/rules/logic.py); a paragraph without one is "sound".
LOGIC_KINDS: tuple[str, ...] = ("causal_overclaim", "scope_shift", "carried_over", "overgeneralisation")
LOGIC_SOUND = "sound"

_RELATION_ALIASES = {
    "supports": "support", "supported": "support", "entailment": "support", "entails": "support",
    "partial": "partial_support", "partially_supported": "partial_support", "partial_support": "partial_support",
    "partially_support": "partial_support", "partially_supports": "partial_support",
    "refute": "contradict", "refutes": "contradict", "refuted": "contradict", "contradicts": "contradict",
    "contradiction": "contradict", "contradicted": "contradict",
    "not_relevant": "irrelevant", "unrelated": "irrelevant", "neutral": "insufficient",
    "not_enough_info": "insufficient", "nei": "insufficient", "not_enough_information": "insufficient",
}


def normalise_relation(value: str) -> str:
    """Map a free-form relation word to one of RELATIONS; raise ValueError naming the allowed set.

    >>> normalise_relation("CONTRADICT")
    'contradict'
    """
    key = re.sub(r"[\s\-]+", "_", str(value).strip().lower())
    key = _RELATION_ALIASES.get(key, key)
    if key not in RELATIONS:
        raise ValueError(f"unknown relation {value!r}; expected one of {', '.join(RELATIONS)}")
    return key


def normalise_text(text: str) -> str:
    """Normalise text for dedup / leakage checks: NFKC, lower case, no punctuation, single spaces.

    >>> normalise_text("The  Drug, reduced   mortality!")
    'the drug reduced mortality'
    >>> normalise_text("药物，降低了死亡率。")
    '药物降低了死亡率'
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(ch if (ch.isalnum() or ch.isspace()) else " " for ch in text)
    text = re.sub(r"\s+", " ", text).strip()
    # CJK characters need no spaces between them; drop spaces that only separate CJK runs.
    return re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", text)


def detect_language(text: str) -> str:
    """Return "zh" when CJK characters make up at least 20% of the letters, else "en".

    >>> detect_language("青霉素于1928年被发现")
    'zh'
    >>> detect_language("Penicillin was discovered in 1928")
    'en'
    """
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    letters = sum(1 for ch in text if ch.isalpha())
    return "zh" if letters and cjk / letters >= 0.2 else "en"


def to_jsonable(value):
    """Dataclasses (Judgment, Evidence ...), lists and dicts as plain JSON values; anything else JSON cannot hold
    becomes its string.

    >>> to_jsonable([Judgment("support", 0.9, "same year")])
    [{'relation': 'support', 'confidence': 0.9, 'reason': 'same year'}]
    >>> to_jsonable({1: ("a", None), "p": Evidence})
    {'1': ['a', None], 'p': "<class 'factlab.schema.Evidence'>"}
    """
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return {k: to_jsonable(v) for k, v in vars(value).items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


class StageName(StrEnum):
    """The stages the checkers call by name (conf/stage/<name>.yaml, factlab/programs/<name>.py): one spelling in the
    code. A member is its string (`StageName.JUDGE == "judge"`), so traces, metrics and JSON keep plain names.

    >>> StageName("extract_claims") is StageName.EXTRACT_CLAIMS, f"{StageName.JUDGE}/calls"
    (True, 'judge/calls')
    """

    PARAGRAPHS = "paragraphs"
    CHECKWORTHY = "checkworthy"
    EXTRACT_CLAIMS = "extract_claims"
    REVIEW_CLAIMS = "review_claims"
    VERTICAL = "vertical"
    QUERY_REWRITE = "query_rewrite"
    JUDGE = "judge"
    PARAGRAPH_TYPE = "paragraph_type"
    LOGIC = "logic"


@dataclass
class Evidence:
    """One evidence snippet as retrieval hands it to the judge and the cards show it."""

    source_id: str
    chunk_id: str
    text: str
    tier: int = 3
    page: int = 1
    domain: str = ""
    title: str = ""
    score: float = 0.0
    start: int = 0  # character offset of `text` inside the chunk's source text
    end: int = 0
    corroborated_by: list[str] = field(default_factory=list)  # other domains carrying the same content
    published: str = ""  # ISO date of the page (a web page's published or updated date); "" = the source record's
    weak: bool = False  # found below `retrieval.search.strong_relevance`: shown and judged, never a contradiction alone

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Judgment:
    """The judge's verdict on one evidence snippet."""

    relation: str
    confidence: float
    reason: str = ""

    def __post_init__(self) -> None:
        self.relation = normalise_relation(self.relation)
        self.confidence = float(min(1.0, max(0.0, self.confidence)))
