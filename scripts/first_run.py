"""First run: every stage once on a bundled example, with the local models (about a minute on 2 CPU cores).

    python scripts/first_run.py [--lm local_qwen05] [--case bundled-en-a-0001]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", default="local_qwen05")
    parser.add_argument("--case", default="bundled-zh-a-0001")
    args = parser.parse_args()

    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.models.errors import call_safely
    from factlab.programs import STAGES
    from factlab.runtime import prepare_offline_env
    from factlab.stages.build import build_program

    prepare_offline_env()
    cases = {c["case_id"]: c for c in load_dataset(compose_config("prepare_data").dataset).cases}
    case = cases[args.case]
    claim = case["claims"][0]
    inputs = {
        "paragraphs": {"document": case["text"]},
        "checkworthy": {"text": claim["sentence"]},
        "extract_claims": {"paragraph": case["text"], "context": ""},
        "review_claims": {"paragraph": case["text"], "claims": [c["text"] for c in case["claims"]]},
        "vertical": {"claim": claim["text"]},
        "query_rewrite": {"claim": claim["text"]},
        "judge": {"claim": claim["text"], "evidence": [e["text"] for e in claim.get("evidence", [])][:2]},
    }
    handle = instantiate(compose_config("run_stage", [f"lm@student={args.lm}"]).student)
    print(f"case {case['case_id']} ({case['lang']}, {case.get('error_type')}); LM {handle.info}")
    with handle.context():
        for stage in STAGES:
            program = build_program(compose_config("run_stage", [f"stage={stage}"]).stage)
            start = time.perf_counter()
            pred, error = call_safely(stage, program, **inputs[stage])
            took = time.perf_counter() - start
            shown = str(error) if error else {k: v for k, v in pred.items()}
            print(f"\n== {stage} ({took:.2f}s)\n{json.dumps(shown, ensure_ascii=False, default=str)[:600]}")


if __name__ == "__main__":
    main()
