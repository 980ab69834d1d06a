"""The Search-R1 style conversation shared by VERL, TRL and the reward: the `search` tool's schema, the system prompt,
how search hits are shown to the model, and how the final `<answer>{json}</answer>` is read back.

One definition for every consumer: data prep writes `system_prompt()` into each row, the VERL tool and the TRL
environment expose `SEARCH_TOOL_SCHEMA` and render hits with `format_hits`, and the reward parses with `parse_answer`.

>>> parse_answer('<tool_call>{"name": "search"}</tool_call> <answer>{"relation": "support"}</answer>')
{'relation': 'support'}
>>> parse_answer("no answer here") is None
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from factlab.data.views import INSTRUCTIONS
from factlab.untrusted import neutralise

TOOL_NAME = "search"
SEARCH_DESCRIPTION = (
    "Search the evidence corpus. Returns the best matching passages, each starting with its [chunk id]."
)
QUERY_DESCRIPTION = "One short keyword query for one open question about the claim."
# What VERL's tool config declares and what transformers derives from `SearchEnvironment.search` (a test checks both).
SEARCH_TOOL_SCHEMA: dict = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": SEARCH_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": QUERY_DESCRIPTION}},
            "required": ["query"],
        },
    },
}
ANSWER_INSTRUCTION = (
    "Use the search tool first: one query per call, and several calls in one turn for independent questions. "
    "Search again for what is still open. When the evidence decides the claim, reply with the JSON object inside "
    '<answer></answer>, e.g. <answer>{"relation": "support", "label": "correct", "chunk_ids": ["src#p1-c1"]}'
    "</answer>."
)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def system_prompt() -> str:
    """The system message of every RL row: the verify task (factlab.data.views) plus the tool and answer format.

    >>> "search tool" in system_prompt() and "<answer>" in system_prompt()
    True
    """
    return f"{INSTRUCTIONS['verify']} {ANSWER_INSTRUCTION}"


def parse_answer(text: str) -> dict | None:
    """The JSON object of the LAST `<answer>...</answer>` in `text`; None when absent or not a JSON object.

    Code fences inside the tags are tolerated.

    >>> parse_answer('<answer>```json\\n{"relation": "contradict"}\\n```</answer>')
    {'relation': 'contradict'}
    >>> parse_answer("<answer>[1, 2]</answer>") is None
    True
    """
    matches = _ANSWER.findall(text or "")
    if not matches:
        return None
    body = matches[-1].strip()
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def searched(text: str) -> bool:
    """Whether a rollout called a tool: VERL's decoded response keeps `<tool_response>`, TRL's keeps `<tool_call>`.

    >>> searched("<tool_call>{}</tool_call>"), searched("<answer>{}</answer>")
    (True, False)
    """
    return "<tool_call>" in (text or "") or "<tool_response>" in (text or "")


def format_hits(hits: Sequence[Mapping]) -> str:
    """Search hits as the model sees them: one `[chunk_id] (tier t) text` line each, the text neutralised.

    >>> format_hits([{"chunk_id": "a#p1-c1", "tier": 1, "text": "Fleming found penicillin in 1928."}])
    '[a#p1-c1] (tier 1) Fleming found penicillin in 1928.'
    >>> format_hits([])
    'No passage matched; try other words.'
    """
    if not hits:
        return "No passage matched; try other words."
    return "\n".join(f"[{hit['chunk_id']}] (tier {hit.get('tier', 3)}) {' '.join(neutralise(str(hit['text'])).split())}"
                     for hit in hits)
