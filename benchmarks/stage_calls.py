"""Seconds per call and parse failures per stage, model and DSPy adapter, on bundled examples (printed table).

    python benchmarks/stage_calls.py --models local_qwen05 local_qwen15 --adapters json chat --n 8

Runs with the LM cache off so every call is real. One "call" is one run of the stage program on one example
(the judge makes one LM call per evidence snippet inside it). A parse failure is an AdapterParseError (or a
refusal) surfaced by factlab.models.errors.call_safely.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict

ADAPTERS = {"json": "dspy.JSONAdapter", "chat": "dspy.ChatAdapter", "xml": "dspy.XMLAdapter"}
LM_STAGES = ("checkworthy", "vertical", "extract_claims", "review_claims", "query_rewrite", "judge", "paragraphs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", default=["local_qwen05", "local_qwen15"])
    parser.add_argument("--adapters", nargs="+", default=["json", "chat"], choices=sorted(ADAPTERS))
    parser.add_argument("--stages", nargs="+", default=list(LM_STAGES))
    parser.add_argument("--n", type=int, default=8, help="examples per stage (seeded sample of the bundled set)")
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()

    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.models.errors import call_safely
    from factlab.runtime import prepare_offline_env
    from factlab.stages.build import build_program
    from factlab.stages.examples import stage_examples

    prepare_offline_env()
    cases = load_dataset(compose_config("prepare_data").dataset).cases
    rng = random.Random(0)
    examples = {}
    for stage in args.stages:
        pool = stage_examples(cases, stage)
        if stage == "paragraphs":  # the LM pass only sees documents with several paragraphs
            pool = [ex for ex in pool if len(ex.paragraphs) > 1]
        examples[stage] = rng.sample(pool, min(args.n, len(pool)))
    rows = []
    for model in args.models:
        for adapter in args.adapters:
            overrides = [f"lm@student={model}", "student.cache=false", f"student.adapter._target_={ADAPTERS[adapter]}"]
            if adapter == "chat":
                overrides.append("+student.adapter.use_json_adapter_fallback=false")
            cfg = compose_config("run_stage", overrides)
            handle = instantiate(cfg.student)
            for stage in args.stages:
                stage_cfg = compose_config("run_stage", [f"stage={stage}", *overrides]).stage
                if stage == "paragraphs":
                    stage_cfg.program.use_lm = True
                program = build_program(stage_cfg)
                stats = defaultdict(float)
                kinds: dict[str, int] = defaultdict(int)
                samples: dict[str, str] = {}
                with handle.context():
                    for ex in examples[stage]:
                        before = len(handle.lm.history)
                        start = time.perf_counter()
                        _, error = call_safely(stage, program, **ex.inputs().toDict())
                        stats["seconds"] += time.perf_counter() - start
                        stats["calls"] += 1
                        stats["lm_calls"] += len(handle.lm.history) - before
                        stats["failures"] += error is not None and error.kind in ("parse", "refusal")
                        stats["errors"] += error is not None
                        if error is not None:
                            kinds[error.kind] += 1
                            samples.setdefault(error.kind, error.message[:200])
                n = stats["calls"] or 1
                rows.append({"model": model, "adapter": adapter, "stage": stage, "calls": int(stats["calls"]),
                             "lm_calls": int(stats["lm_calls"]), "s_per_call": stats["seconds"] / n,
                             "s_per_lm_call": stats["seconds"] / max(1, stats["lm_calls"]),
                             "parse_failures": int(stats["failures"]), "errors": int(stats["errors"]),
                             "error_kinds": dict(kinds), "error_samples": samples})
                print(json.dumps(rows[-1]), flush=True)
    header = (f"{'model':14} {'adapter':7} {'stage':15} {'calls':>5} {'lm':>4} {'s/call':>7} {'s/lm':>6} "
              f"{'parse fail':>10} {'other errors':12}")
    print("\n" + header + "\n" + "-" * len(header))
    for r in rows:
        print(f"{r['model']:14} {r['adapter']:7} {r['stage']:15} {r['calls']:5d} {r['lm_calls']:4d} "
              f"{r['s_per_call']:7.2f} {r['s_per_lm_call']:6.2f} {r['parse_failures']:>4d}/{r['calls']:<5d} "
              f"{', '.join(f'{k} {v}' for k, v in r['error_kinds'].items() if k not in ('parse', 'refusal')) or '-'}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
