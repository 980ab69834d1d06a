"""Timeliness: a claim about what is current is checked against the newest authoritative source it was judged on.

Text in, values out (no I/O, no model). A source's date comes from factlab/rules/dating.py (`find_source_date`), a
claim's time (current / past / dated / unmarked, and the date bound of "as of <date>") from factlab/rules/tense.py
(`claim_tense`); this module holds the rule and its config (`Timeliness`, conf/timeliness/*.yaml).

**The rule** (`Timeliness.apply`), per support / partial_support S from a dated source, for a current or dated claim:
the candidates are the other judged sources that are strictly newer than S (a year-only date is not newer than a
full date of the same year), at least as authoritative (tier number <= S's) and not after the claim's bound. Walking
them newest first, the first one that speaks decides:

- it supports / partially supports the claim -> S is kept (the claim is still true);
- it contradicts the claim -> S becomes `insufficient` (not when the snippet is `weak`, retrieved below
  `retrieval.search.strong_relevance`: as in the business rules, barely about the claim is no contradiction);
- it is a newer version of S's document -> S becomes `insufficient`, whatever it says (supersedes: the two titles are
  equal after stripping years, dates, brackets and edition words: edition, revised, update, 修订, 2020版 ...);
- otherwise (another document that does not speak to the claim) the next candidate is tried.

A downgraded S gets the note "<where> supports only the past: superseded by <title> (<date>)". A past claim keeps
every support (with a note when one would have been downgraded). An unmarked claim ("The code caps nitrate at
50 mg/L") reads in the present, but without a cue only a contradiction from a newer source is strong enough
(`unmarked: contradicted`, the default); `current` applies both rules, `ignore` none. `newest` is always the newest
dated source among all the judged ones, whatever its tier or relation (ties: the better tier, then the first judged),
so a card can show it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from factlab.rules.business import JudgedEvidence
from factlab.rules.dating import (
    Date,
    FoundDate,
    date_in_text,
    date_sort_key,
    find_source_date,
    format_date,
    newer,
    not_after,
    record_field,
)
from factlab.rules.tense import CURRENT_CUES, PAST_CUES, ClaimTense, TenseCues
from factlab.schema import Evidence, Judgment

SUPPORTING = ("support", "partial_support")
UNMARKED_MODES = ("ignore", "contradicted", "current")

# ---------------------------------------------------------------- supersession

_EDITION_WORDS = re.compile(
    r"(?<!\d)(?:1[89]|20)\d\d\s*年?\s*版(?!权)"
    r"|(?<!\d)(?:1[89]|20)\d\d(?:\s*年(?:\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?)?|[-/.]\d{1,2}(?:[-/.]\d{1,2})?)?"
    r"|第\s*[一二三四五六七八九十\d]+\s*(?:次|版)|(?:修订|修正|修改)(?:版|本|稿)?|新版|旧版|最新版|现行|草案|征求意见稿"
    r"|\b(?:\d+(?:st|nd|rd|th)|first|second|third|new|latest|current|consolidated)\b"
    r"|\b(?:revised|revision|amended|amendments?|edition|version|update[ds]?|draft)\b|\bv\d+(?:\.\d+)*\b",
    re.IGNORECASE,
)
_NOT_WORD = re.compile(r"[\s\W_]+")


def title_family(title: str) -> str:
    """A title with years, dates, edition words, brackets and punctuation stripped: two sources whose titles share a
    family are versions of one document.

    >>> title_family("Ostvale Hypertension Guideline (2023 update)") == title_family("Ostvale Hypertension Guideline")
    True
    >>> title_family("云岫省饮用水卫生条例（2023年修订）"), title_family("《临沅省校园食品安全规范（2018版）》")
    ('云岫省饮用水卫生条例', '临沅省校园食品安全规范')
    """
    return _NOT_WORD.sub("", _EDITION_WORDS.sub(" ", title or "")).lower()


def same_document(title_a: str, title_b: str) -> bool:
    """True when the two titles are one family of at least 4 characters (an equal family, never a containment:
    "Guideline on hypertension in children" is not a version of "Guideline on hypertension")."""
    a, b = title_family(title_a), title_family(title_b)
    return len(a) >= 4 and a == b


# ---------------------------------------------------------------- the rule

@dataclass(frozen=True)
class NewestSource:
    """The newest dated source among a claim's judged evidence, for the card."""

    source_id: str
    title: str
    date: Date
    tier: int
    kind: str = ""  # where the date came from (FoundDate.kind)

    @property
    def date_text(self) -> str:
        return format_date(self.date)

    def __str__(self) -> str:
        return f"{self.title} ({self.date_text})"

    def to_dict(self) -> dict:
        return {**asdict(self), "date": self.date_text}


@dataclass(frozen=True)
class _Dated:
    index: int
    item: JudgedEvidence
    title: str
    found: FoundDate | None


def _as_judged(item: JudgedEvidence | tuple[Evidence, Judgment], index: int) -> JudgedEvidence:
    if isinstance(item, JudgedEvidence):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        return JudgedEvidence(*item)
    raise TypeError(f"judged evidence #{index}: expected JudgedEvidence or an (Evidence, Judgment) pair, "
                    f"got {type(item).__name__}")


def _index_sources(sources: Mapping[str, Any] | Iterable[Any] | None) -> dict[str, Any]:
    if sources is None:
        return {}
    if isinstance(sources, Mapping):
        return {str(k): v for k, v in sources.items()}
    index = {}
    for record in sources:
        source_id = record_field(record, "source_id")
        if source_id:
            index[str(source_id)] = record
    return index


@dataclass
class Timeliness:
    """The timeliness check; one instance per conf/timeliness/<name>.yaml (`timeliness=off` turns it off).

    Args:
        name: the config's name, for messages.
        enabled: False = `apply` changes nothing, adds no note and returns no newest source.
        unmarked: how a claim with no time cue is read: `contradicted` (default: only a newer contradicting source
            downgrades an older support), `current` (as if it said "current") or `ignore`.
        current_cues / past_cues: regular expressions per language (case-insensitive), searched in the claim.
    """

    name: str = "default"
    enabled: bool = True
    unmarked: str = "contradicted"
    current_cues: Mapping[str, Sequence[str]] = field(default_factory=lambda: {k: list(v) for k, v in
                                                                                CURRENT_CUES.items()})
    past_cues: Mapping[str, Sequence[str]] = field(default_factory=lambda: {k: list(v) for k, v in
                                                                             PAST_CUES.items()})

    def __post_init__(self) -> None:
        where = f"timeliness {self.name!r} (conf/timeliness/{self.name}.yaml)"
        if not isinstance(self.enabled, bool):
            raise ValueError(f"{where}: field enabled must be true or false, got {self.enabled!r}")
        if self.unmarked not in UNMARKED_MODES:
            raise ValueError(f"{where}: field unmarked is {self.unmarked!r}; expected one of "
                             f"{', '.join(UNMARKED_MODES)}")
        for name in ("current_cues", "past_cues"):
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"{where}: field {name} must map a language to a list of regular expressions")
        self._cues = TenseCues.compile(self.current_cues, self.past_cues, where)

    def tense(self, claim: str) -> ClaimTense:
        """The claim's time with this config's cues."""
        return self._cues.tense(claim)

    def apply(
        self,
        claim: str,
        judged: Sequence[JudgedEvidence | tuple[Evidence, Judgment]],
        sources: Mapping[str, Any] | Iterable[Any] | None = None,
    ) -> tuple[list[JudgedEvidence], list[str], NewestSource | None]:
        """The judged evidence with superseded support downgraded, the notes for the card, and the newest source.

        Args:
            claim: the claim's text.
            judged: every snippet the judge saw for this claim with its judgment (JudgedEvidence or (Evidence,
                Judgment) pairs), as `BusinessRules.decide` takes them.
            sources: the source records by source_id, or an iterable of records (dicts or objects with source_id,
                title, year, date, text / pages). A snippet whose source is missing or undated is dated from its
                own title and text.

        Returns:
            (judged', notes, newest): judged' has the same length and order, each item a JudgedEvidence, a
            downgraded one with an `insufficient` judgment; notes are reviewer hints; newest is the newest dated
            source among the judged ones (None when none is dated, or when the check is off).
        """
        items = [_as_judged(item, i) for i, item in enumerate(judged)]
        if not self.enabled:
            return items, [], None
        index = _index_sources(sources)
        dated = [self._dated(i, item, index) for i, item in enumerate(items)]
        newest = self._newest(dated)
        tense = self.tense(claim)
        rules = self._rules(tense)
        notes: list[str] = []
        if tense.kind == "current" and any(d.item.relation in SUPPORTING for d in dated):
            notes.append(f"claim about what is current ({tense.cue!r}"
                         + (f", as of {format_date(tense.as_of)}" if tense.as_of else "") + "): "
                         + (f"newest dated source {newest} (tier {newest.tier})" if newest
                            else "no judged source carries a date; timeliness not checked"))
        out = list(items)
        for d in dated:
            if d.item.relation not in SUPPORTING or d.found is None:
                continue
            decider = self._decider(d, dated, tense, contradict_only=rules == "contradict")
            if decider is None:
                continue
            by = f"{decider.title} ({format_date(decider.found.date)})"
            if rules is None:
                notes.append(f"{d.item.where()} ({format_date(d.found.date)}) kept for a {tense.kind} claim "
                             f"({tense.cue!r}), though {by} supersedes it")
                continue
            reason = f"supports only the past: superseded by {by}"
            out[d.index] = JudgedEvidence(d.item.evidence, Judgment("insufficient", d.item.confidence,
                                                                    f"timeliness: {reason}"))
            notes.append(f"{d.item.where()} ({format_date(d.found.date)}) {reason}")
        return out, notes, newest

    def _rules(self, tense: ClaimTense) -> str | None:
        """"all" (contradict + same document), "contradict" (contradict only) or None (keep every support)."""
        if tense.kind in ("current", "dated"):
            return "all"
        if tense.kind == "unmarked":
            return {"current": "all", "contradicted": "contradict", "ignore": None}[self.unmarked]
        return None

    @staticmethod
    def _dated(i: int, item: JudgedEvidence, index: Mapping[str, Any]) -> _Dated:
        ev = item.evidence
        record = index.get(ev.source_id)
        title = record_field(record, "title") or ev.title or ev.source_id
        found = find_source_date(record) if record is not None else None
        if found is None:
            found = date_in_text(ev.title or str(title), ev.text)
        return _Dated(i, item, str(title), found)

    @staticmethod
    def _newest(dated: list[_Dated]) -> NewestSource | None:
        with_date = [d for d in dated if d.found is not None]
        if not with_date:
            return None
        best = min(with_date, key=lambda d: (tuple(-x for x in date_sort_key(d.found.date)), d.item.tier, d.index))
        return NewestSource(best.item.evidence.source_id, best.title, best.found.date, best.item.tier,
                            best.found.kind)

    @staticmethod
    def _decider(support: _Dated, dated: list[_Dated], tense: ClaimTense, contradict_only: bool) -> _Dated | None:
        """The newer, at-least-as-authoritative source that supersedes `support` on this claim, or None."""
        own = support.item.evidence.source_id
        by_source: dict[str, list[_Dated]] = {}
        for d in dated:
            if (d.found is not None and d.item.evidence.source_id != own and d.item.tier <= support.item.tier
                    and newer(d.found.date, support.found.date)
                    and (tense.as_of is None or not_after(d.found.date, tense.as_of))):
                by_source.setdefault(d.item.evidence.source_id, []).append(d)
        ranked = sorted(by_source.values(), key=lambda ds: (tuple(-x for x in date_sort_key(ds[0].found.date)),
                                                              min(d.item.tier for d in ds), ds[0].index))
        for snippets in ranked:
            relations = {d.item.relation for d in snippets}
            if relations & set(SUPPORTING):
                return None  # the newer source still backs the claim
            if any(d.item.relation == "contradict" and not d.item.evidence.weak for d in snippets):
                return snippets[0]  # a `weak` snippet (barely about the claim) contradicts nothing here either
            if not contradict_only and same_document(support.title, snippets[0].title):
                return snippets[0]
        return None
