"""Vertical checkers: claims a general search handles badly get a specialised, deterministic check, behind one
interface and chosen by a router (conf/verticals/*.yaml; the first checker that applies to a claim answers):

- `LinkChecker`: every link in the claim is well-formed, points at a source of the corpus, and (only when the network
  is allowed) answers with an HTTP status below 400. A broken link is a hint and sends the claim to review; it does
  not make the claim wrong.
- `LookupTable`: an authoritative table (CSV: a key column, a value column), e.g. official phone numbers or codes:
  a claim that names a key and states a value is supported when the value matches (digits compared, trunk zeros
  aside, so separators and "+86 871 ..." do not matter) and contradicted when the table holds another; with several
  keys, each key is checked against the values stated after it. Anything `value_pattern` matches is taken for a
  value, so a case number shaped like a phone number is read as one.
- `QuoteMatcher`: a quotation in the claim (“...”, "...", 「...」, at least `min_chars`) matched against reference
  texts (lyrics, chapter titles, quotations): verbatim (up to case, full- / half-width punctuation and line breaks)
  -> support; a near match (difflib ratio >= `min_ratio`) -> contradict, with the differing span shown; nothing
  close -> no answer.

A checker's answer is an `(Evidence, Judgment)` pair the business rules weigh like any judged snippet (the table or
reference is its source, at its configured tier), or only a hint.
"""

from __future__ import annotations

import csv
import difflib
import re
import unicodedata
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factlab.schema import Evidence, Judgment

# A link ends at whitespace, quotes, brackets, and at Chinese text or full-width punctuation (Chinese prose puts no
# space after a link); a link of the sources that goes on in Chinese characters is still read whole (`_extend`).
_URL_CHARS = r"[^\s<>()\"'“”「」\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+"
_URL = re.compile(rf"https?://{_URL_CHARS}|www\.{_URL_CHARS}")
_PUNCT = ".,;:!?'\"()[]…。，、；：！？"
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
        for match in _URL.finditer(claim):
            url = _extend(match.group().rstrip(".,;:!?。，；："), claim[match.start():], known)
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


def _extend(url: str, rest: str, known: set[str]) -> str:
    """The longest source url that `rest` (the claim from the link on) starts with, when longer than `url`: a link
    with Chinese characters in its path is read whole when the sources have it.

    >>> _extend("https://a.example/wiki/", "https://a.example/wiki/静夜思是一首诗", {"https://a.example/wiki/静夜思"})
    'https://a.example/wiki/静夜思'
    """
    prefix = "" if rest.startswith("http") else "https://"
    longer = [k for k in known if len(k) > len(prefix + url) and (prefix + rest).startswith(k)]
    return max(longer, key=len)[len(prefix):] if longer else url


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

    def _stated(self, claim: str, key: str, starts: list[int]) -> set[str]:
        """The values the claim states for `key`: those from the key up to the next key named after it ("A is x and B
        is y" gives A x), else (nothing there, e.g. the value comes first) every value of the claim."""
        start = claim.find(key)
        end = min((s for s in starts if s > start), default=len(claim))
        return ({_digits(v) for v in self.pattern.findall(claim[start:end])}
                or {_digits(v) for v in self.pattern.findall(claim)})

    def applies(self, claim: str) -> bool:
        return bool(self.pattern.search(claim)) and bool(self._keys(claim))

    def check(self, claim: str, sources: Sequence[Mapping]) -> VerticalAnswer:
        answer = VerticalAnswer(self.name)
        keys = self._keys(claim)
        starts = sorted({claim.find(key) for _, key, _ in keys})
        for line, key, value in keys:
            stated = self._stated(claim, key, starts)
            evidence = Evidence(f"table-{self.name}", f"table-{self.name}#p1-c{line}", f"{key}: {value}",
                                tier=self.tier, title=f"lookup table {self.name}")
            if _national(_digits(value)) in {_national(v) for v in stated}:
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


def _national(digits: str) -> str:
    """A number without its trunk zeros, so that "+86 871 6523 4567" (the pattern reads "871 6523 4567") matches
    "0871-6523 4567".

    >>> _national(_digits("0871-6523 4567")) == _national(_digits("871 6523 4567"))
    True
    """
    return digits.lstrip("0") or digits


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
            verbatim = next(((ref, span) for ref, text in self.texts.items() if (span := _verbatim(quote, text))),
                            None)
            if verbatim is not None:
                ref, span = verbatim
                evidence = Evidence(f"ref-{ref}", f"ref-{ref}#p1-c1", span, tier=self.tier, title=f"reference {ref}")
                answer.judged.append((evidence, Judgment("support", 1.0, "the quotation is verbatim")))
                continue
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


def _canonical(text: str) -> tuple[str, list[int]]:
    """`text` as quotations are compared (NFKC, so full- and half-width punctuation agree; case folded; a line break
    or run of spaces read as one space, and as none next to Chinese), with each character's index in `text`.

    >>> _canonical("床前明月光，\\n疑是地上霜。")[0], _canonical("Thou art more  temperate:\\nRough winds")[0]
    ('床前明月光,疑是地上霜。', 'thou art more temperate: rough winds')
    """
    chars: list[tuple[str, int]] = []
    for i, ch in enumerate(text):
        chars += [(" " if c.isspace() else c, i) for c in unicodedata.normalize("NFKC", ch).casefold()]
    out: list[tuple[str, int]] = []
    for k, (c, i) in enumerate(chars):
        if c == " ":
            after = next((d for d, _ in chars[k + 1:] if d != " "), "")
            if not out or out[-1][0] == " " or not after or _wide(out[-1][0]) or _wide(after):
                continue
        out.append((c, i))
    return "".join(c for c, _ in out), [i for _, i in out]


def _wide(ch: str) -> bool:
    return "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" or unicodedata.east_asian_width(ch) in "WF"


def _verbatim(quote: str, text: str) -> str | None:
    """The span of `text` the quotation gives verbatim, up to case, punctuation width and line breaks (else None)."""
    if quote in text:
        return quote
    canon_quote = _canonical(quote)[0]
    canon_text, index = _canonical(text)
    at = canon_text.find(canon_quote) if canon_quote else -1
    return text[index[at]:index[at + len(canon_quote) - 1] + 1] if at >= 0 else None


def _closest(quote: str, text: str) -> tuple[str, float]:
    """The span of `text` closest to `quote` (same length windows, word-aligned where possible) and its ratio.

    The span shows the whole differing part: with spaces it is widened to whole words; without (Chinese) it is
    re-aligned on the characters that match, so that a changed last character is in it (the best-ratio window is one
    shorter and drops it):

    >>> _closest("床前明月光，疑是地上雪", "床前明月光，疑是地上霜。举头望明月")
    ('床前明月光，疑是地上霜', 0.9523809523809523)
    >>> _closest("Rough winds do shake the darling buds of April", "more temperate:\\nRough winds do shake the "
    ...          "darling buds of May,\\nAnd summer's lease")[0]
    'Rough winds do shake the darling buds of May,'
    """
    if quote in text:
        return quote, 1.0
    best, best_ratio, best_at = "", 0.0, (0, 0)
    n = len(quote)
    step = max(1, n // 20)
    for start in range(0, max(1, len(text) - n // 2), step):
        for size in (n - n // 10, n, n + n // 10):
            window = text[start:start + size]
            ratio = difflib.SequenceMatcher(None, quote, window, autojunk=False).ratio()
            if ratio > best_ratio:
                best, best_ratio, best_at = window, ratio, (start, size)
    if best_ratio > 0:
        best = _aligned(quote, text, *best_at) if " " not in quote else _words(text, *best_at)
    return best.strip(), best_ratio


def _words(text: str, start: int, size: int, most: int = 20) -> str:
    """text[start:start+size] widened to whole words at either end (at most `most` characters each way)."""
    lo, hi = start, min(len(text), start + size)
    while lo > 0 and start - lo < most and not text[lo - 1].isspace() and not text[lo].isspace():
        lo -= 1
    while 0 < hi < len(text) and hi - start - size < most and not text[hi].isspace() and not text[hi - 1].isspace():
        hi += 1
    return text[lo:hi]


def _aligned(quote: str, text: str, start: int, size: int) -> str:
    """The span of `text` around text[start:start+size] from the quote's first to its last character, the unmatched
    characters at either end counted in (so a substituted last character is in the span)."""
    pad = abs(len(quote) - size) + len(quote) // 10 + 1
    lo = max(0, start - pad)
    region = text[lo:start + size + pad]
    blocks = [b for b in difflib.SequenceMatcher(None, quote, region, autojunk=False).get_matching_blocks() if b.size]
    if not blocks:
        return text[start:start + size]
    first, last = blocks[0], blocks[-1]
    begin = max(0, first.b - first.a)
    return region[begin:min(len(region), last.b + last.size + len(quote) - last.a - last.size)]


def _difference(quote: str, reference: str) -> str:
    """The first differing span, as the claim has it and as the reference has it (word level when spaced)."""
    a, b = (quote.split(), reference.split()) if " " in quote else (list(quote), list(reference))
    if " " not in quote:  # characters: line breaks are no difference
        a, b = [c for c in a if not c.isspace()], [c for c in b if not c.isspace()]
    joiner = " " if " " in quote else ""
    # case, width and the punctuation a word carries are no difference
    keys = lambda tokens: [_canonical(t)[0].strip(_PUNCT) or _canonical(t)[0] for t in tokens]  # noqa: E731
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys(a), keys(b), autojunk=False).get_opcodes():
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
