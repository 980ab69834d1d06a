"""Views of cases for each consumer: classifier rows, relation pairs and RL chat rows (the DSPy examples of a
stage are the stage's own `to_examples`, gathered by factlab.stages.examples).

Every view reads the same case dicts (schema: datasets/README.md) and skips what a case cannot serve, so a view
over a dataset without that gold is simply empty.
"""

from __future__ import annotations

from collections.abc import Iterable

from factlab.schema import LABELS, RELATIONS

# The system instruction of each chat task (the RL rows; factlab/train/rl/format.py adds the answer format).
INSTRUCTIONS: dict[str, str] = {
    "verify": (
        "Search the corpus for evidence on the claim, then answer with a JSON object: "
        f'{{"relation": one of {", ".join(RELATIONS)}; "label": one of {", ".join(LABELS)}; '
        '"chunk_ids": the ids of the chunks you relied on}.'
    ),
}


def chat_messages(task: str, user: str, assistant: str | None = None) -> list[dict[str, str]]:
    """The chat prompt of a task: system instruction, user input and, when given, the assistant answer.

    >>> [m["role"] for m in chat_messages("verify", "Water boils at 100 C.")]
    ['system', 'user']
    """
    if task not in INSTRUCTIONS:
        raise ValueError(f"unknown chat task {task!r}; expected one of {', '.join(INSTRUCTIONS)}")
    messages = [{"role": "system", "content": INSTRUCTIONS[task]}, {"role": "user", "content": user}]
    if assistant is not None:
        messages.append({"role": "assistant", "content": assistant})
    return messages


def relation_pairs(cases: Iterable[dict]) -> list[dict]:
    """Claim-evidence rows for relation classifiers.

    One row per evidence item (`kind` "evidence", `source` its source id), plus per claim with evidence and a gold
    relation one row with all its evidence joined (`kind` "claim", `source` the source ids joined by ","), except
    where that would repeat the claim's single evidence row.

    >>> case = {"case_id": "x", "lang": "en", "claims": [{"text": "c", "relation": "support", "evidence": [
    ...     {"source_id": "s", "text": "e", "relation": "support"}]}]}
    >>> [(row["evidence"], row["relation"], row["kind"]) for row in relation_pairs([case])]
    [('e', 'support', 'evidence')]
    """
    rows = []
    for case in cases:
        for claim in case.get("claims", []):
            evidence = claim.get("evidence", [])
            base = {"claim": claim["text"], "lang": case["lang"], "case_id": case["case_id"]}
            rows += [{**base, "evidence": item["text"], "relation": item["relation"], "source": item["source_id"],
                      "kind": "evidence"} for item in evidence]
            repeats = len(evidence) == 1 and evidence[0]["relation"] == claim.get("relation")
            if evidence and claim.get("relation") and not repeats:
                sources = ",".join(dict.fromkeys(item["source_id"] for item in evidence))
                rows.append({**base, "evidence": "\n".join(item["text"] for item in evidence),
                             "relation": claim["relation"], "source": sources, "kind": "claim"})
    return rows


def checkworthy_rows(cases: Iterable[dict]) -> list[dict]:
    """Sentence rows for check-worthiness classifiers, from the gold `sentences` of each case.

    >>> checkworthy_rows([{"case_id": "x", "lang": "en", "sentences": [{"text": "Hi.", "checkworthy": False}]}])
    [{'text': 'Hi.', 'checkworthy': False, 'reason': '', 'lang': 'en', 'case_id': 'x'}]
    """
    return [
        {"text": sentence["text"], "checkworthy": sentence["checkworthy"], "reason": sentence.get("reason", ""),
         "lang": case["lang"], "case_id": case["case_id"]}
        for case in cases
        for sentence in case.get("sentences", [])
    ]


def vertical_rows(cases: Iterable[dict]) -> list[dict]:
    """Rows for vertical classifiers: each claim with its own `vertical` (`level` "claim") and each case with one
    (`level` "case"), skipping a case row whose text is just one of its claims.

    >>> case = {"case_id": "x", "lang": "en", "text": "t", "vertical": "medical", "claims": [{"text": "t",
    ...         "vertical": "medical"}]}
    >>> [(row["text"], row["level"]) for row in vertical_rows([case])]
    [('t', 'claim')]
    """
    rows = []
    for case in cases:
        base = {"lang": case["lang"], "case_id": case["case_id"]}
        claims = case.get("claims", [])
        rows += [{**base, "text": claim["text"], "vertical": claim["vertical"], "level": "claim"}
                 for claim in claims if claim.get("vertical")]
        if case.get("vertical") and case["text"] not in {claim["text"] for claim in claims}:
            rows.append({**base, "text": case["text"], "vertical": case["vertical"], "level": "case"})
    return rows


def rl_rows(cases: Iterable[dict]) -> list[dict]:
    """RL rows, one per claim with a gold relation or label: the chat prompt, the ground truth the reward checks
    (relation, label, gold evidence chunk ids) and extra info.

    >>> case = {"case_id": "x", "lang": "en", "claims": [{"text": "c", "label": "correct"}]}
    >>> rl_rows([case])[0]["ground_truth"]
    {'relation': None, 'label': 'correct', 'chunk_ids': []}
    """
    return [
        {"prompt": chat_messages("verify", claim["text"]),
         "ground_truth": {"relation": claim.get("relation"), "label": claim.get("label"),
                          "chunk_ids": list(dict.fromkeys(item["chunk_id"] for item in claim.get("evidence", [])))},
         "extra_info": {"case_id": case["case_id"], "claim": claim["text"], "lang": case["lang"]}}
        for case in cases
        for claim in case.get("claims", [])
        if claim.get("relation") or claim.get("label")
    ]

