"""A stage is added by its own files only: this test writes a new stage, `toy_queries` (its program file and its
conf/stage/toy_queries.yaml, in a folder of its own), puts it in the query-rewrite place of the professional checker
with one override, and runs verify.py's job on the bundled example over the scripted LM. No file of the package or of
conf/ is touched: the checker takes the stage from config, the CLI reads its inputs off its `forward`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from factlab.checkers.job import run
from factlab.config import compose_config

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = '''"""Claim -> search queries, the claim's numbers given a query of their own (a toy stage)."""

import re

import dspy


class WriteQueries(dspy.Signature):
    """Write search queries that would find evidence for or against the claim."""

    claim: str = dspy.InputField()
    queries: list[str] = dspy.OutputField(desc="search queries, most useful first")


class ToyQueries(dspy.Module):
    def __init__(self, prefix: str = "TOY") -> None:
        super().__init__()
        self.prefix, self.write = prefix, dspy.Predict(WriteQueries)

    def forward(self, claim: str) -> dspy.Prediction:
        numbers = " ".join(re.findall(r"\\d+", claim))
        queries = list(self.write(claim=claim).queries)
        return dspy.Prediction(queries=[*queries, f"{self.prefix} {numbers or claim}"])


def _score(gold: list[str], pred: list[str]) -> float:
    return float(bool(set(gold) & set(pred)))


def metric(example, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
    score = _score(example.queries, pred.queries)
    return dspy.Prediction(score=score, feedback="a gold query was written" if score else "no gold query")


def to_examples(case: dict) -> list:
    return [dspy.Example(claim=c["text"], queries=c.get("queries", [])).with_inputs("claim") for c in case["claims"]]
'''

CONFIG = """# A toy stage: claim -> queries, plus one query of the claim's numbers.
_target_: factlab.stages.build.build_stage
_recursive_: false
name: toy_queries
backend: program
compiled: null
store: null
model: null
program:
  _target_: toy_queries.ToyQueries
  prefix: TOY
"""


def test_a_stage_added_from_its_own_files_runs_through_verify(tmp_path, monkeypatch):
    package, conf = tmp_path / "package", tmp_path / "conf" / "stage"
    package.mkdir()
    conf.mkdir(parents=True)
    (package / "toy_queries.py").write_text(PROGRAM, encoding="utf-8")
    (conf / "toy_queries.yaml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "golden"))  # scripted_lm
    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    cfg = compose_config("verify", [
        f"input={ROOT / 'datasets/bundled/examples/report_en_short.md'}",
        f"sources={ROOT / 'datasets/bundled/corpus'}", f"output_dir={out}", "progress=false",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "checker=professional",
        "stage@stage.query_rewrite=toy_queries",  # the new stage in the query-rewrite place
        "student._target_=scripted_lm.scripted_lm", "claim_cache.enabled=false"])
    summary = run(cfg)
    cards = json.loads((out / "cards.json").read_text(encoding="utf-8"))
    checked = [c for p in cards["paragraphs"] for c in p["claims"] if c["checkworthy"] and not c["error"]]
    assert checked and all(c["queries"][-1] == "TOY " + (" ".join(re.findall(r"\d+", c["text"])) or c["text"])
                           for c in checked)
    assert any(re.search(r"\d", c["text"]) for c in checked)
    assert summary["costs"]["query_rewrite"]["items"] == len(checked)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.suffix in (".py", ".yaml")) \
        == ["conf/stage/toy_queries.yaml", "package/toy_queries.py"]  # the stage's own files, nothing else
    assert "toy_queries" not in sys.modules or sys.modules["toy_queries"].__file__.startswith(str(package))
