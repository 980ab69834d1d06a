"""The llama.cpp server's prompt-prefix cache (factlab/models/llama_server.py) on the real professional pipeline:
evaluate.py on the same cases under each setting, every LM call real (a fresh DSPy cache per run), one run at a
time, a fresh server per run, wall seconds and what the runs produced side by side (printed table).

    python benchmarks/llama_server.py                          # claims_bench test, first 2 cases, both settings
    python benchmarks/llama_server.py --cases 3 --settings "no cache" "prompt cache" "no cache"

Settings: no prompt cache (prompt_cache_mb=0) and the KV-only prompt cache (512 MB, the default in
conf/lm/local_*.yaml), both with factlab's `--logits_all false` (docs/checkers.md's tables of 2026-12-04 were measured
before that, with llama_cpp's logits_all=True, as "as it comes" / "prompt cache"); a setting named twice runs twice
(run-to-run noise here is ~10%). The cache changes where a prompt's KV comes from, not what is computed, so the labels
should agree item for item (floating-point sums over differently split prompt batches may, rarely, flip a token: the
table counts the agreeing labels). The prompt tokens the server evaluated (not those sent) are in its log. Outputs
stay in outputs/benchmarks/llama_server/<setting>/.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "outputs" / "benchmarks" / "llama_server"
SETTINGS = {"no cache": 0, "prompt cache": 512}


def server_timings(log: str) -> dict[str, float]:
    """llama.cpp's own per-request timings in a stretch of the server log, summed: requests, prompt tokens evaluated
    (those a cached prefix spared are not) and their seconds, tokens decoded and their seconds."""
    prompt = re.findall(r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens", log)
    decode = re.findall(r"\n\S*\s*eval time =\s+([\d.]+) ms /\s+(\d+) runs", log)
    return {"requests": len(prompt), "prompt_tokens": sum(int(n) for _, n in prompt),
            "prompt_s": sum(float(ms) for ms, _ in prompt) / 1000, "decode_tokens": sum(int(n) for _, n in decode),
            "decode_s": sum(float(ms) for ms, _ in decode) / 1000}


def run(name: str, mb: int, args, index: int, log: Path) -> dict:
    from factlab.data.jsonl import read_jsonl

    out = OUT / f"{index}_{name.replace(' ', '_')}"
    shutil.rmtree(out, ignore_errors=True)  # every call real: no DSPy cache from an earlier run
    cmd = [sys.executable, "evaluate.py", f"dataset={args.dataset}", f"split={args.split}", f"max_cases={args.cases}",
           "judge_given_gold=false", "attribution.counterfactual.stages=[]", "tracking=off",
           f"lm@student={args.lm}", f"student.prompt_cache_mb={mb}", f"lm_cache_dir={out / 'dspy'}",
           f"output_dir={out}", f"hydra.run.dir={out}"]
    offset = log.stat().st_size if log.exists() else 0
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    with log.open("rb") as handle:
        handle.seek(offset)
        server = server_timings(handle.read().decode(errors="replace"))
    summary = json.loads((out / "summary.json").read_text())
    items = read_jsonl(out / "items.jsonl")
    usage = [c for c in summary["costs"].get("pipeline", {}).values() if isinstance(c, dict)]  # per stage
    return {"name": name, "wall": wall, "calls": sum(int(c.get("calls", 0)) for c in usage),
            "prompt": sum(int(c.get("prompt_tokens", 0)) for c in usage),
            "completion": sum(int(c.get("completion_tokens", 0)) for c in usage), "items": items,
            "accuracy": summary["metrics"].get(f"{args.split}/label/accuracy"), "server": server}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="claims_bench")
    parser.add_argument("--split", default="test")
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--lm", default="local_qwen05")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    args = parser.parse_args()
    from factlab.config import compose_config
    from factlab.runtime import cache_root

    alias = compose_config("evaluate", [f"lm@student={args.lm}"]).student.alias
    log = cache_root() / "servers" / f"{alias}.log"  # factlab.models.server appends each server's log here
    rows = [run(name, SETTINGS[name], args, i, log) for i, name in enumerate(args.settings)]
    base = rows[0]
    print(f"\n{args.dataset} {args.split}, first {args.cases} cases, {args.lm}, professional checker, "
          "every call real\n")
    print("| server | wall s | LM calls | prompt / completion tokens sent | prompt tokens evaluated (s) "
          "| tokens decoded (s) | speed-up | label accuracy | labels as the first row |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        pairs = list(zip(base["items"], r["items"], strict=False))
        same = sum(a.get("pred_label") == b.get("pred_label") for a, b in pairs)
        accuracy = "-" if r["accuracy"] is None else f"{r['accuracy']:.3f}"
        srv = r["server"]
        print(f"| {r['name']} | {r['wall']:.0f} | {r['calls']} | {r['prompt']} / {r['completion']} "
              f"| {srv['prompt_tokens']} ({srv['prompt_s']:.0f}) | {srv['decode_tokens']} ({srv['decode_s']:.0f}) "
              f"| {base['wall'] / r['wall']:.2f}x | {accuracy} | {same} of {len(pairs)} |")


if __name__ == "__main__":
    main()
