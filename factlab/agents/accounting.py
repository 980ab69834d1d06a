"""Token accounting of LM calls, per round: what each call sent (input) as factlab counts tokens, and what the LM
server reported when it did.

`input_tokens` counts the rendered messages with `factlab.matching.text.count_tokens` (latin words and CJK
characters count 1 each), so fake and real LMs are measured alike and cache hits still count what was sent;
`lm_prompt_tokens` is the server's own count (0 for a fake LM or a cache hit).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from factlab.matching.text import count_tokens


@dataclass
class CallCost:
    """What the LM calls inside one `meter()` block sent."""

    calls: int = 0
    input_tokens: int = 0
    lm_prompt_tokens: int = 0


@dataclass
class RoundLog:
    """One round of a checker: the LM call(s) that planned it and the searches it ran.

    `round` is 1-based; the final verdict call is logged as its own entry with `kind` "verdict".
    """

    round: int
    kind: str  # "step" (update state / plan searches) or "verdict"
    input_tokens: int
    lm_prompt_tokens: int = 0
    queries: list[str] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)  # chunk ids found by this round's searches
    context_tokens: int = 0  # tokens of state + results (ours) or of the whole history (naive) the call saw

    def to_dict(self) -> dict:
        return asdict(self)


def message_tokens(messages: list[dict]) -> int:
    """Tokens of a chat request's message contents.

    >>> message_tokens([{"role": "user", "content": "Penicillin was found in 1928."}])
    5
    """
    total = 0
    for message in messages or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
        total += count_tokens(str(content or ""))
    return total


@contextlib.contextmanager
def meter() -> Iterator[CallCost]:
    """Measure the calls made to the current DSPy LM (`dspy.settings.lm`) inside the block."""
    import dspy

    lm = dspy.settings.lm
    if lm is None:
        raise RuntimeError("no DSPy LM configured: call the checker inside `with lm_handle.context():` "
                           "(conf/lm/<name>.yaml) or dspy.context(lm=...)")
    start = len(lm.history)
    cost = CallCost()
    try:
        yield cost
    finally:
        for entry in lm.history[start:]:
            cost.calls += 1
            cost.input_tokens += message_tokens(entry.get("messages") or [{"content": entry.get("prompt") or ""}])
            usage = entry.get("usage") or {}
            cost.lm_prompt_tokens += int(usage.get("prompt_tokens") or 0)
