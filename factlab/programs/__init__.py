"""The LM stages of the checking pipeline, one DSPy program per file (see conf/stage/<name>.yaml).

Each stage module exposes: its Signature(s), the dspy.Module, `_score(gold, pred)`, `metric(...)` returning
`dspy.Prediction(score=..., feedback=...)`, and `to_examples(case) -> list[dspy.Example]`.
"""

from factlab.schema import StageName

# The claim pipeline's seven stages. The layers' stages (LAYER_STAGES: the paragraph typer and the logic layer) are
# built as parts of the document layers (conf/pipeline/default.yaml `layers`, conf/logic/stage.yaml), and optimized
# like any of these (optimize.py stage=logic dataset=logic_gold; stage=paragraph_type dataset=paragraph_types).
STAGES: tuple[StageName, ...] = (
    StageName.PARAGRAPHS, StageName.CHECKWORTHY, StageName.EXTRACT_CLAIMS, StageName.REVIEW_CLAIMS, StageName.VERTICAL,
    StageName.QUERY_REWRITE, StageName.JUDGE,
)
LAYER_STAGES: tuple[StageName, ...] = (StageName.PARAGRAPH_TYPE, StageName.LOGIC)
