"""Every stage once on Chinese and English input with the real llama.cpp server and the local 0.5B model.

Asserts structure, never exact text. Marked `llm` (run in CI: `pytest -m llm`).
"""

from __future__ import annotations

import pytest
from hydra.utils import instantiate

from factlab.config import compose_config
from factlab.models.errors import call_safely
from factlab.schema import RELATIONS
from factlab.stages.build import build_program

pytestmark = pytest.mark.llm

INPUTS = {
    "en": {
        "checkworthy": {"text": "The Eiffel Tower was completed in 1889."},
        "vertical": {"claim": "Aspirin reduced the risk of stroke by 20% in adults over 65."},
        "extract_claims": {"paragraph": "The Acme X1 phone was released in 2019. It sold 3 million units in its first "
                                        "year.", "context": ""},
        "review_claims": {"paragraph": "In mice, drug K lowered blood pressure by 10%.",
                          "claims": ["Drug K lowered blood pressure by 10% in humans."]},
        "query_rewrite": {"claim": "China's GDP grew 5.2% in 2023."},
        "judge": {"claim": "Penicillin was discovered in 1938.",
                  "evidence": ["Alexander Fleming discovered penicillin in 1928."]},
        "paragraphs": {"document": "# Title\n\nThe first paragraph has several words about one topic.\n\n"
                                   "The second paragraph talks about another topic at some length."},
    },
    "zh": {
        "checkworthy": {"text": "埃菲尔铁塔于1889年建成。"},
        "vertical": {"claim": "2023年某央行将存款准备金率下调0.25个百分点。"},
        "extract_claims": {"paragraph": "华为于2019年发布了Mate 30手机。该手机首年销量达到1000万台。", "context": ""},
        "review_claims": {"paragraph": "在小鼠实验中，药物K使血压降低了10%。",
                          "claims": ["药物K使人类血压降低了10%。"]},
        "query_rewrite": {"claim": "2023年中国国内生产总值增长5.2%。"},
        "judge": {"claim": "青霉素于1938年被发现。", "evidence": ["弗莱明于1928年发现了青霉素。"]},
        "paragraphs": {"document": "# 标题\n\n第一段包含足够多的中文字符来成为独立段落。\n\n"
                                   "第二段同样包含足够多的文字内容。"},
    },
}

CHECKS = {
    "checkworthy": lambda p: isinstance(p.checkworthy, bool) and isinstance(p.reason, str),
    "vertical": lambda p: p.vertical in ("general", "medical", "finance", "law", "science", "tech", "disaster",
                                         "sports", "entertainment") and isinstance(p.confidence, float),
    "extract_claims": lambda p: isinstance(p.claims, list) and all(isinstance(c, str) for c in p.claims),
    "review_claims": lambda p: isinstance(p.reviewed_claims, list),
    "query_rewrite": lambda p: 1 <= len(p.queries) and all(isinstance(q, str) and q for q in p.queries),
    "judge": lambda p: p.relation in RELATIONS and len(p.judgments) == 1 and 0 <= p.confidence <= 1,
    "paragraphs": lambda p: len(p.paragraphs) >= 2,
}


@pytest.fixture(scope="module")
def student():
    cfg = compose_config("run_stage", ["lm@student=local_qwen05"])
    return instantiate(cfg.student)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("stage", list(CHECKS))
def test_stage_runs_on_local_model(student, stage, lang):
    cfg = compose_config("run_stage", [f"stage={stage}", "lm@student=local_qwen05"])
    program = build_program(cfg.stage)
    with student.context():
        pred, error = call_safely(stage, program, **INPUTS[lang][stage])
    assert error is None, f"{stage}/{lang}: {error}"  # JSONAdapter + llama.cpp's schema constraint must parse
    assert CHECKS[stage](pred), f"{stage}/{lang}: unexpected structure {pred}"
