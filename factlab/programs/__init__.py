"""The LM stages of the checking pipeline, one DSPy program per file (see conf/stage/<name>.yaml).

Each stage module exposes: its Signature(s), the dspy.Module, `_score(gold, pred)`, `metric(...)` returning
`dspy.Prediction(score=..., feedback=...)`, and `to_examples(case) -> list[dspy.Example]`.
"""

STAGES: tuple[str, ...] = (
    "paragraphs", "checkworthy", "extract_claims", "review_claims", "vertical", "query_rewrite", "judge",
)
