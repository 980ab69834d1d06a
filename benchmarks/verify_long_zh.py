"""verify.py on the ~6,000-character Chinese report against the ~260-source bundled corpus, local 0.5B student:
wall time, LM calls, tokens and latency per stage, claim-cache and LM-cache hit rates (printed tables).

    python benchmarks/verify_long_zh.py [--lm local_qwen05] [--runs 2]

Run 1 starts from empty caches (a fresh DSPy cache dir and claim cache); run 2 repeats the same command and
shows what the caches save. Both runs use the same index (built in run 1; its time is reported separately).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lm", default="local_qwen05")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--input", default=str(ROOT / "datasets/bundled/examples/report_zh_long.md"))
    parser.add_argument("--sources", default=str(ROOT / "datasets/bundled/corpus"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="factlab-bench-"))
    os.environ["FACTLAB_CACHE"] = str(work / "cache")  # fresh claim cache and index; models are re-assembled
    from factlab.checkers.job import run
    from factlab.config import compose_config

    text = Path(args.input).read_text(encoding="utf-8")
    print(f"document: {args.input} ({len(text)} characters); sources: {args.sources}")
    rows = []
    for i in range(args.runs):
        cfg = compose_config("verify", [f"input={args.input}", f"sources={args.sources}", f"lm@student={args.lm}",
                                        f"output_dir={work / f'run{i + 1}'}", f"lm_cache_dir={work / 'dspy'}",
                                        "progress=true"])
        start = time.perf_counter()
        result = run(cfg)
        result["wall"] = time.perf_counter() - start
        rows.append(result)
        (work / f"run{i + 1}.json").write_text(json.dumps(result, ensure_ascii=False, indent=2))
    for i, result in enumerate(rows):
        s = result["summary"]
        print(f"\nrun {i + 1}: wall {result['wall']:.1f}s, paragraphs {s['paragraphs']}, claims {s['claims']}, "
              f"labels {s['labels']}, errors {s['errors']}, claim cache {result['claim_cache']}")
        header = (f"{'stage':15} {'items':>6} {'seconds':>8} {'LM calls':>8} {'cache hits':>10} {'tokens in':>9} "
                  f"{'tokens out':>10}")
        print(header + "\n" + "-" * len(header))
        for stage, c in result["costs"].items():
            print(f"{stage:15} {c['items']:6d} {c['seconds']:8.1f} {c.get('calls', 0):8d} {c.get('cache_hits', 0):10d} "
                  f"{c.get('prompt_tokens', 0):9d} {c.get('completion_tokens', 0):10d}")
    print(f"\nartifacts under {work}")


if __name__ == "__main__":
    main()
