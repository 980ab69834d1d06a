"""Vertical checkers: claims a general search handles badly get a specialised, deterministic check, behind one
interface and chosen by a router (conf/verticals/*.yaml; the first checker that applies to a claim answers):

- `LinkChecker`: every link in the claim is well-formed, points at a source of the corpus, and (only when the network
  is allowed) answers with an HTTP status below 400. A broken link is a hint and sends the claim to review; it does
  not make the claim wrong.
- `LookupTable`: an authoritative table (CSV: a key column, a value column), e.g. official phone numbers or codes:
  a claim that names a key and states a value is supported when the value matches and contradicted when the table
  holds another.
- `QuoteMatcher`: a quotation in the claim (“...”, "...", 「...」, at least `min_chars`) matched against reference
  texts (lyrics, chapter titles, quotations): exact -> support; a near match (difflib ratio >= `min_ratio`) ->
  contradict, with the differing span shown; nothing close -> no answer.

A checker's answer is an `(Evidence, Judgment)` pair the business rules weigh like any judged snippet (the table or
reference is its source, at its configured tier), or only a hint.
"""

from __future__ import annotations

import csv
import difflib
import re
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factlab.schema import Evidence, Judgment

_URL = re.compile(r"https?://[^\s<>()\"'“”「」]+|www\.[^\s<>()\"'“”「」]+")
_QUOTE = re.compile(r"“([^”]+)”|\"([^\"]+)\"|「([^」]+)」|『([^』]+)』")


@dataclass
class VerticalAnswer:
    checker: str
    judged: list[tuple[Evidence, Judgment]] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    review: bool = False


class LinkChecker:
    """Links in a claim: syntax, presence among the sources' urls, and the HTTP status when `network` is on.

    >>> checker = LinkChecker()
    >>> answer = checker.check("See https://who.int/report and htp:/bad", [{"url": "https://who.int/report"}])
    >>> answer.hints, answer.review
    ([], False)
    >>> checker.check("Details at https://example.org/gone.", []).hints
    ['link https://example.org/gone is not among the sources: check it points where the claim says']
    """

    name = "links"

    def __init__(self, network: bool = False, timeout_s: float = 5.0) -> None:
        self.network, self.timeout_s = network, timeout_s

    def applies(self, claim: str) -> bool:
        return bool(_URL.search(claim))

    def check(self, claim: str, sources: Sequence[Mapping]) -> VerticalAnswer:
        known = {str(s.get("url", "")).rstrip("/") for s in sources if s.get("url")}
        answer = VerticalAnswer(self.name)
        for raw in _URL.findall(claim):
            url = raw.rstrip(".,;:!?。，；：")
            full = url if url.startswith("http") else "https://" + url
            parts = urllib.parse.urlsplit(full)
            if parts.scheme not in ("http", "https") or "." not in parts.netloc or " " in full:
                answer.hints.append(f"link {url} is malformed: fix it")
                answer.review = True
                continue
            if full.rstrip("/") not in known:
                answer.hints.append(f"link {url} is not among the sources: check it points where the claim says")
            if self.network:
                status = self.status(full)
                if status is None or status >= 400:
                    answer.hints.append(f"link {url} does not answer ({status or 'no response'}): replace it")
                    answer.review = True
        return answer

    def status(self, url: str) -> int | None:
        request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "factlab-link-check"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 (http/https only)
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except (urllib.error.URLError, TimeoutError, ValueError):
            return None


class LookupTable:
    """An authoritative CSV table: rows of (key, value); a claim naming a key and a value-shaped string is checked.

    Args:
        path: the CSV file (header row with `key_column` and `value_column`).
        value_pattern: how a value looks in a claim (e.g. a phone number).
        tier: the table's authority tier (1 = official).
    """

    def __init__(self, name: str, path: str | Path, key_column: str, value_column: str, value_pattern: str,
                 tier: int = 1) -> None:
        self.name, self.tier = name, tier
        self.pattern = re.compile(value_pattern)
        path = Path(path)
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = {key_column, value_column} - set(reader.fieldnames or [])
            if missing:
                raise ValueError(f"{path}: lookup table {name!r} has no column(s) {sorted(missing)} "
                                 f"(columns: {reader.fieldnames})")
            self.rows = [(i + 2, row[key_column].strip(), row[value_column].strip()) for i, row in enumerate(reader)
                         if row[key_column].strip()]

    def _keys(self, claim: str) -> list[tuple[int, str, str]]:
        return [row for row in self.rows if row[1] and row[1] in claim]

    def applies(self, claim: str) -> bool:
        return bool(self.pattern.search(claim)) and bool(self._keys(claim))

    def check(self, claim: str, sources: Sequence[Mapping]) -> VerticalAnswer:
        answer = VerticalAnswer(self.name)
        stated = {_digits(v) for v in self.pattern.findall(claim)}
        for line, key, value in self._keys(claim):
            evidence = Evidence(f"table-{self.name}", f"table-{self.name}#p1-c{line}", f"{key}: {value}",
                                tier=self.tier, title=f"lookup table {self.name}")
            if _digits(value) in stated:
                answer.judged.append((evidence, Judgment("support", 1.0, f"the table lists {key}: {value}")))
            else:
                answer.judged.append((evidence, Judgment("contradict", 1.0, f"the table lists {key}: {value}")))
                answer.hints.append(f"the table lists {key} as {value}, the claim says "
                                    f"{', '.join(sorted(stated))}")
        return answer


def _digits(text: str) -> str:
    """Digits only, for comparing numbers written with different separators.

    >>> _digits("010-6523 4567"), _digits("(010) 65234567")
    ('01065234567', '01065234567')
    """
    return re.sub(r"\D", "", text)


class QuoteMatcher:
    """Quotations in a claim matched against reference texts (a folder of .txt files or given texts).

    >>> matcher = QuoteMatcher("refs", texts={"song": "Twinkle twinkle little star, how I wonder what you are"})
    >>> answer = matcher.check('It opens "Twinkle twinkle little star, how I wonder where you are".', [])
    >>> answer.judged[0][1].relation, answer.hints[0]
    ('contradict', 'quotation differs from song: “where” where the reference has “what”')
    >>> matcher.check('It opens "Twinkle twinkle little star".', []).judged[0][1].relation
    'support'
    """

    def __init__(self, name: str, folder: str | Path | None = None, texts: Mapping[str, str] | None = None,
                 min_chars: int = 8, min_ratio: float = 0.8, tier: int = 1) -> None:
        self.name, self.min_chars, self.min_ratio, self.tier = name, min_chars, min_ratio, tier
        self.texts = dict(texts or {})
        if folder is not None:
            for path in sorted(Path(folder).glob("*.txt")):
                self.texts[path.stem] = path.read_text(encoding="utf-8")

    def _quotes(self, claim: str) -> list[str]:
        return [q for groups in _QUOTE.findall(claim) for q in groups if len(q.strip()) >= self.min_chars]

    def applies(self, claim: str) -> bool:
        return bool(self._quotes(claim)) and bool(self.texts)

    def check(self, claim: str, sources: Sequence[Mapping]) -> VerticalAnswer:
        answer = VerticalAnswer(self.name)
        for quote in self._quotes(claim):
            best = max(((ref, *_closest(quote, text)) for ref, text in self.texts.items()), key=lambda r: r[2],
                       default=None)
            if best is None:
                continue
            ref, span, ratio = best
            evidence = Evidence(f"ref-{ref}", f"ref-{ref}#p1-c1", span, tier=self.tier, title=f"reference {ref}")
            if span == quote:
                answer.judged.append((evidence, Judgment("support", 1.0, "the quotation is verbatim")))
            elif ratio >= self.min_ratio:
                answer.judged.append((evidence, Judgment("contradict", 1.0, f"near match ({ratio:.2f})")))
                answer.hints.append(f"quotation differs from {ref}: {_difference(quote, span)}")
        return answer


def _closest(quote: str, text: str) -> tuple[str, float]:
    """The span of `text` closest to `quote` (same length windows, word-aligned where possible) and its ratio."""
    if quote in text:
        return quote, 1.0
    best, best_ratio = "", 0.0
    n = len(quote)
    step = max(1, n // 20)
    for start in range(0, max(1, len(text) - n // 2), step):
        for size in (n - n // 10, n, n + n // 10):
            window = text[start:start + size]
            ratio = difflib.SequenceMatcher(None, quote, window, autojunk=False).ratio()
            if ratio > best_ratio:
                best, best_ratio = window, ratio
    return best.strip(), best_ratio


def _difference(quote: str, reference: str) -> str:
    """The first differing span, as the claim has it and as the reference has it (word level when spaced)."""
    a, b = (quote.split(), reference.split()) if " " in quote else (list(quote), list(reference))
    joiner = " " if " " in quote else ""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return f"“{joiner.join(a[i1:i2])}” where the reference has “{joiner.join(b[j1:j2])}”"
    return "they differ in spacing or punctuation"


class VerticalRouter:
    """The configured checkers in order; the first that applies to a claim answers (None: none applies)."""

    def __init__(self, checkers: Iterable) -> None:
        self.checkers = list(checkers)

    def check(self, claim: str, sources: Sequence[Mapping]) -> VerticalAnswer | None:
        for checker in self.checkers:
            if checker.applies(claim):
                return checker.check(claim, sources)
        return None
