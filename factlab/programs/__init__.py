"""The LM stages of the checking pipeline, one DSPy program per file (see conf/stage/<name>.yaml).

Each stage module exposes: its Signature(s), the dspy.Module, `_score(gold, pred)`, `metric(...)` returning
`dspy.Prediction(score=..., feedback=...)`, and `to_examples(case) -> list[dspy.Example]`.
"""

# The claim pipeline's seven stages. The layers' stages (LAYER_STAGES: the paragraph typer and the logic layer) are
# built as parts of the document layers (conf/pipeline/default.yaml `layers`, conf/logic/stage.yaml), and optimized
# like any of these (optimize.py stage=logic dataset=logic_gold; stage=paragraph_type dataset=paragraph_types).
STAGES: tuple[str, ...] = (
    "paragraphs", "checkworthy", "extract_claims", "review_claims", "vertical", "query_rewrite", "judge",
)
LAYER_STAGES: tuple[str, ...] = ("paragraph_type", "logic")
