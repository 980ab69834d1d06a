"""The lexical baseline a judge must beat: a logistic regression on premise/hypothesis word-overlap features plus a
hashed bag of the hypothesis's words (the hypothesis-only signal NLI sets are known to leak), trained on the same
pairs as the judge. English is split into words, Chinese into characters.

>>> features("The cat sat.", "A cat sat on a mat.")[:3]
[0.6666666666666666, 0.5, 0.4]
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

_WORD = re.compile(r"[\u4e00-\u9fff]|[a-z0-9]+")
_NEGATION = re.compile(r"\b(not|no|never|nobody|nothing|none|n't)\b|不|没|无|非|未|别")
HASH_DIM = 2048
LABELS3 = ("entailment", "neutral", "contradiction")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def features(claim: str, evidence: str) -> list[float]:
    """Overlap features of one pair: share of the claim's tokens / bigrams in the evidence, share of the evidence's
    tokens in the claim, length ratio, negation in claim only / evidence only, numbers of the claim missing."""
    c, e = tokens(claim), tokens(evidence)
    cs, es = set(c), set(e)
    cb, eb = set(zip(c, c[1:], strict=False)), set(zip(e, e[1:], strict=False))
    numbers = [t for t in cs if t.isdigit()]
    return [len(cs & es) / max(1, len(cs)), len(cb & eb) / max(1, len(cb)), len(cs & es) / max(1, len(es)),
            min(3.0, len(c) / max(1, len(e))), float(bool(_NEGATION.search(claim)) and not _NEGATION.search(evidence)),
            float(bool(_NEGATION.search(evidence)) and not _NEGATION.search(claim)),
            sum(n not in es for n in numbers) / max(1, len(numbers)), float(len(c) > 12)]


def _matrix(claims: Sequence[str], evidence: Sequence[str]):
    import torch

    dense = torch.tensor([features(c, e) for c, e in zip(claims, evidence, strict=True)], dtype=torch.float32)
    bag = torch.zeros((len(claims), HASH_DIM), dtype=torch.float32)
    for row, claim in enumerate(claims):
        for token in set(tokens(claim)):
            bag[row, zlib.crc32(token.encode()) % HASH_DIM] = 1.0
    return torch.cat([dense, bag], dim=1)


class LexicalBaseline:
    """Multinomial logistic regression (torch, L2, full-batch L-BFGS) over `features` + the hashed claim bag."""

    def fit(self, claims: Sequence[str], evidence: Sequence[str], labels: Sequence[str], l2: float = 1e-3,
            iterations: int = 100) -> LexicalBaseline:
        import torch

        x = _matrix(claims, evidence)
        y = torch.tensor([LABELS3.index(label) for label in labels])
        self.weight = torch.zeros((x.shape[1], len(LABELS3)), requires_grad=True)
        self.bias = torch.zeros(len(LABELS3), requires_grad=True)
        optimizer = torch.optim.LBFGS([self.weight, self.bias], max_iter=iterations, line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(x @ self.weight + self.bias, y) + l2 * (self.weight ** 2).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        return self

    def predict(self, claims: Sequence[str], evidence: Sequence[str]) -> list[str]:
        import torch

        with torch.no_grad():
            scores = _matrix(claims, evidence) @ self.weight + self.bias
        return [LABELS3[i] for i in scores.argmax(dim=1).tolist()]
