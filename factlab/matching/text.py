"""Language-agnostic text matching used by every layer: similarity, containment, one-to-one pairing, choice picking
and token counts (no models, no I/O).

Chinese has no spaces, so similarity works on character bigrams of the normalised text for CJK and on
word unigrams for everything else; both mixed in one bag.

>>> round(similarity("The drug cut deaths by 20%", "the drug cut deaths by 20 %"), 2)
1.0
>>> similarity("青霉素于1928年被发现", "青霉素于1928年被发现") == 1.0
True
>>> similarity("abc", "") == 0.0
True
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from factlab.schema import normalise_text

Match = Callable[[list[str], list[str]], list[tuple[int, int, float]]]  # (gold, pred) -> one-to-one pairs

_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+", re.UNICODE)
# Function words that carry no evidence on their own; used where plain overlap (not IDF) scores text.
STOPWORDS: frozenset[str] = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being it its this that these "
    "those as than then there which who whom whose what when where how not no nor so such can could may might "
    "will would shall should do does did has have had about into over under between after before also more most "
    "的 了 是 在 和 与 及 或 也 都 就 而 并 对 于 为 以 其 之 "
    "这 那 有 被 把 将 从 由 等 个 中 上 下 我们 他们 它们 一个".split()
)
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z0-9]+(?:[.,'][A-Za-z0-9]+)*")


def tokens(text: str) -> list[str]:
    """Word tokens for Latin text, single characters for CJK.

    >>> tokens("GDP grew 5.2% 国内生产总值")
    ['gdp', 'grew', '5', '2', '国', '内', '生', '产', '总', '值']
    """
    return _TOKEN.findall(normalise_text(text))


def _features(text: str) -> Counter:
    toks = tokens(text)
    feats = Counter(t for t in toks if not ("\u4e00" <= t[0] <= "\u9fff"))
    cjk = [t for t in toks if "\u4e00" <= t[0] <= "\u9fff"]
    feats.update(a + b for a, b in zip(cjk, cjk[1:], strict=False))
    if len(cjk) == 1:
        feats.update(cjk)
    return feats


def similarity(a: str, b: str) -> float:
    """F1 overlap of token features (words + CJK bigrams) between two texts, in [0, 1]."""
    fa, fb = _features(a), _features(b)
    if not fa or not fb:
        return 0.0
    overlap = sum((fa & fb).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(fb.values()), overlap / sum(fa.values())
    return 2 * precision * recall / (precision + recall)


def containment(part: str, whole: str) -> float:
    """Share of `part`'s token features (words + CJK bigrams) that occur in `whole`, in [0, 1].

    >>> containment("Fleming found penicillin", "In 1928 Fleming found penicillin in a dish.")
    1.0
    >>> containment("Fleming found gold", "Fleming found penicillin")
    0.6666666666666666
    """
    fp, fw = _features(part), _features(whole)
    if not fp:
        return 0.0
    return sum((fp & fw).values()) / sum(fp.values())


def content_containment(part: str, whole: str) -> float:
    """Share of `part`'s content features (words and CJK bigrams, stopwords left out) that occur in `whole`; 1.0 when
    `part` has none. What the rules ask of a snippet before they trust a `support` (does it say the claim's words?).

    >>> content_containment("Penicillin was discovered in 1928", "Fleming discovered penicillin in 1928.")
    1.0
    >>> content_containment("Penicillin was discovered in 1938", "The bank raised rates in March.")
    0.0
    """
    fp = Counter({k: v for k, v in _features(part).items() if k not in STOPWORDS})
    if not fp:
        return 1.0
    return sum((fp & _features(whole)).values()) / sum(fp.values())


def grounded(claim: str, paragraph: str, min_share: float) -> bool:
    """Whether at least `min_share` of a claim's content words are in its paragraph's text: the grounding guard every
    checker applies to its claims (a claim restating another paragraph or a context summary fails it).

    >>> grounded("Aspirin reduces fever.", "It reduces fever, as aspirin does.", 0.5)
    True
    >>> grounded("The X1 was launched in 2019.", "Critics loved the design.", 0.5)
    False
    """
    return content_containment(claim, paragraph) >= min_share


def numbers(text: str) -> set[str]:
    """The numbers a text states, thousands separators dropped.

    >>> sorted(numbers("3,000 cases in 2019 and 4.5%"))
    ['2019', '3000', '4.5']
    """
    return {n.replace(",", "") for n in _NUMBER.findall(unicodedata.normalize("NFKC", text))}


def greedy_pairs(scored: Iterable[tuple[float, int, int]], threshold: float) -> list[tuple[int, int, float]]:
    """One-to-one pairs (row, column, score) from (score, row, column) triples, best score first (ties: lowest row,
    then lowest column), each at least `threshold`; sorted by row.

    >>> greedy_pairs([(0.9, 0, 0), (0.8, 0, 1), (0.85, 1, 0), (0.1, 1, 1)], 0.5)
    [(0, 0, 0.9)]
    >>> greedy_pairs([(0.9, 0, 0), (0.8, 0, 1), (0.95, 1, 0)], 0.5)
    [(0, 1, 0.8), (1, 0, 0.95)]
    >>> greedy_pairs([(0.7, 1, 1), (0.7, 0, 0), (0.7, 0, 1), (0.7, 1, 0)], 0.5)  # ties: lowest indices first
    [(0, 0, 0.7), (1, 1, 0.7)]
    """
    used_rows: set[int] = set()
    used_cols: set[int] = set()
    pairs = []
    for score, i, j in sorted(scored, key=lambda t: (-t[0], t[1], t[2])):
        if score < threshold:
            break
        if i in used_rows or j in used_cols:
            continue
        used_rows.add(i)
        used_cols.add(j)
        pairs.append((i, j, score))
    return sorted(pairs)


def match_sets(gold: list[str], pred: list[str],
               threshold: float) -> tuple[list[tuple[int, int, float]], list[int], list[int]]:
    """Greedy one-to-one matching of predicted to gold texts by similarity.

    Returns (matches as (gold_index, pred_index, similarity), unmatched gold indices, unmatched pred indices).

    >>> m, g, p = match_sets(["a b c", "x y z"], ["x y z", "q"], 0.5)
    >>> [(i, j) for i, j, _ in m], g, p
    ([(1, 0)], [0], [1])
    """
    return with_unmatched(greedy_pairs(((similarity(g, p), i, j) for i, g in enumerate(gold)
                                        for j, p in enumerate(pred)), threshold), len(gold), len(pred))


def match_texts(gold: list[str], pred: list[str], match: Match | None,
                threshold: float) -> tuple[list[tuple[int, int, float]], list[int], list[int]]:
    """`match_sets` with `match` (a claim matcher such as evaluate.py's) in place of lexical similarity when given:
    the one pairing of the claim stages' metrics (extract_claims, review_claims).

    >>> by_length = lambda g, p: [(i, j, 1.0) for i, a in enumerate(g) for j, b in enumerate(p) if len(a) == len(b)]
    >>> match_texts(["ab", "xyz"], ["xyz"], by_length, 0.5), match_texts(["ab"], ["ab"], None, 0.5)[0]
    (([(1, 0, 1.0)], [0], []), [(0, 0, 1.0)])
    """
    if match is None:
        return match_sets(gold, pred, threshold)
    return with_unmatched(match(gold, pred), len(gold), len(pred))


def with_unmatched(matches: list[tuple[int, int, float]], n_gold: int,
                   n_pred: int) -> tuple[list[tuple[int, int, float]], list[int], list[int]]:
    """(matches, unmatched gold indices, unmatched pred indices)."""
    used_g = {i for i, _, _ in matches}
    used_p = {j for _, j, _ in matches}
    return matches, [i for i in range(n_gold) if i not in used_g], [j for j in range(n_pred) if j not in used_p]


def pick_choice(value: object, choices: tuple[str, ...] | list[str], aliases: Mapping[str, str] | None = None) -> str:
    """The allowed choice a small model's free-form answer names first (it often appends format notes).

    `aliases` maps words a model uses instead of a choice onto it ("health" -> "medical"); they are tried only when
    the answer names no choice itself. Raises ValueError naming the allowed choices when none is named.

    >>> pick_choice("general      # note: the value must be one of: general; medical", ["medical", "general"])
    'general'
    >>> pick_choice("Partial_Support.", ["support", "partial_support"])
    'partial_support'
    >>> pick_choice("Health", ["medical", "general"], aliases={"health": "medical"})
    'medical'
    """
    text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    found = [(text.find(c), -len(c), c) for c in choices if c in text]
    if not found and aliases:
        found = [(text.find(a.lower()), -len(a), c) for a, c in aliases.items() if c in choices and a.lower() in text]
    if not found:
        raise ValueError(f"{str(value)[:80]!r} is not one of {', '.join(choices)}")
    return min(found)[2]


def as_confidence(value: object) -> float:
    """An LM's confidence coerced to [0, 1]: percentages are scaled, and anything not a number (a small model
    copying a demo's "Not supplied for this particular example.") is 0.5. Signatures declare confidence as a
    `str` and read it through this, so a stray word is a neutral confidence, not a parse error that DSPy's
    Evaluate counts towards cancelling a whole candidate (measured: judge bootstrap, 0.5B student).

    >>> as_confidence("85"), as_confidence(0.3), as_confidence("0.7 (fairly sure)"), as_confidence("n/a")
    (0.85, 0.3, 0.7, 0.5)
    >>> as_confidence(None), as_confidence(True), as_confidence("-3")
    (0.5, 0.5, 0.0)
    """
    if isinstance(value, bool) or value is None:
        return 0.5
    if isinstance(value, int | float):
        x = float(value)
    else:
        found = re.search(r"-?\d+(?:\.\d+)?", str(value))
        if not found:
            return 0.5
        x = float(found.group())
    if x != x:  # NaN
        return 0.5
    return min(1.0, max(0.0, x / 100 if x > 1 else x))


def count_tokens(text: str) -> int:
    """Rough token count for budgets and size limits: every CJK character counts 1, every latin word or number 1.

    >>> count_tokens("青霉素于1928年被发现")
    9
    >>> count_tokens("GDP grew 5.2% in 2023 国内生产")
    9
    """
    text = unicodedata.normalize("NFKC", text)
    return len(_CJK_CHAR.findall(text)) + len(_WORD.findall(text))


# Words whose difference changes what a claim states (a fact-checker exists to catch exactly these).
NEGATIONS: frozenset[str] = frozenset(
    "not no never none nor neither cannot without nobody nothing nowhere 不 没 未 无 非 否 别 勿 莫".split())
QUALIFIERS: frozenset[str] = frozenset(
    "only all every some most many few more less fewer over under above below least about approximately nearly "
    "almost roughly around up than may might could can likely unlikely possibly probably mice mouse rats rat humans "
    "human adults children patients vitro vivo controlled trial preliminary estimated "
    "只 仅 都 所有 全部 部分 大多 多数 少数 超过 低于 高于 至少 至多 约 大约 近 几乎 "
    "可能 或许 也许 小鼠 大鼠 动物 人类 成人 儿童 初步 估计".split())
# What two near-identical claims may differ in and still state the same thing: articles and particles.
_ORDER_FREE = frozenset("a an the 的 了".split())


def reuse_blocker(a: str, b: str) -> str | None:
    """Why a verdict on claim `b` must not be reused for claim `a`, or None when the two state the same thing.

    Near-duplicate claims differ in exactly what a fact-checker checks ("1928" vs "1938", "reduces" vs
    "increases", "4.2 million" vs "42 million"): numbers, negations and qualifiers are compared explicitly, and when
    in doubt there is no reuse: beyond articles, particles, case, punctuation and spacing, the two token sequences
    (names, units and dates included) must be the same.

    >>> reuse_blocker("Penicillin was discovered in 1928.", "penicillin was discovered in 1928")
    >>> reuse_blocker("Penicillin was discovered in 1938.", "Penicillin was discovered in 1928.")
    "numbers differ: ['1938'] vs ['1928']"
    >>> reuse_blocker("The drug reduces mortality.", "The drug increases mortality.")
    'wording differs: reduces vs increases'
    >>> reuse_blocker("青霉素于1928年被发现。", "青霉素于1938年被发现。")
    "numbers differ: ['1928'] vs ['1938']"
    """
    if numbers(a) != numbers(b):
        return f"numbers differ: {sorted(numbers(a))} vs {sorted(numbers(b))}"
    ta, tb = tokens(a), tokens(b)
    for name, words in (("negation", NEGATIONS), ("qualifiers", QUALIFIERS)):
        wa, wb = {t for t in ta if t in words}, {t for t in tb if t in words}
        if wa != wb:
            return f"{name} differs: {sorted(wa)} vs {sorted(wb)}"
    ka, kb = [t for t in ta if t not in _ORDER_FREE], [t for t in tb if t not in _ORDER_FREE]
    if ka != kb:
        diff = [(x, y) for x, y in zip(ka, kb, strict=False) if x != y][:1] or [(" ".join(ka[-1:]), " ".join(kb[-1:]))]
        return f"wording differs: {diff[0][0]} vs {diff[0][1]}"
    return None

