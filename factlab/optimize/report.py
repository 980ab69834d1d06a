"""Readable views of a compiled program and of an optimisation: instructions + demos as text, score over budget."""

from __future__ import annotations

import json

import dspy


def program_text(program: dspy.Module) -> str:
    """Every predictor's instruction, fields and demos as plain text (what a reviewer reads in MLflow)."""
    parts = []
    for name, predictor in program.named_predictors():
        signature = predictor.signature
        parts.append(f"=== predictor: {name} ({signature.__name__})")
        parts.append(f"inputs: {', '.join(signature.input_fields)}  ->  outputs: {', '.join(signature.output_fields)}")
        parts.append("--- instruction")
        parts.append(signature.instructions.strip())
        parts.append(f"--- demos ({len(predictor.demos)})")
        for index, demo in enumerate(predictor.demos, 1):
            values = demo.toDict() if hasattr(demo, "toDict") else dict(demo)
            parts.append(f"[{index}] " + json.dumps(values, ensure_ascii=False, default=str))
        parts.append("")
    return "\n".join(parts)


def budget_figure(curve: list[tuple[int, float]], baseline_val: float, title: str):
    """Best val score found vs metric calls spent, with the baseline as a dashed line (matplotlib Figure)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4), dpi=100)
    axes = figure.subplots()
    if curve:
        calls, scores = zip(*curve, strict=True)
        axes.step(calls, scores, where="post", marker="o", label="best val score so far")
    axes.axhline(baseline_val, linestyle="--", color="grey", label=f"baseline val {baseline_val:.3f}")
    axes.set_xlabel("metric calls (program runs scored while compiling)")
    axes.set_ylabel("val score")
    axes.set_title(title)
    axes.legend(loc="lower right")
    figure.tight_layout()
    return figure
