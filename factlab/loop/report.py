"""The loop's rounds as a table and a chart: per evaluation the compiled stages, label accuracy with its bootstrap
interval, the paired gain over the evaluation before and over the first (the same gold claims, resampled by case),
and where the blame for the wrong labels went; the stacked blame chart is evaluate's comparison figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from factlab.data.jsonl import iter_jsonl
from factlab.metrics import markdown_table, paired_gain
from factlab.pipeline.trace import PIPELINE_STAGES

SHOWN = (*PIPELINE_STAGES, "none", "several")


def correct_by_case(output_dir: str | Path) -> dict[str, dict[str, float]] | None:
    """case id -> claim id -> 1.0 when the final label is the gold label, read from an evaluation's items.jsonl (gold
    claims without a gold label left out); None when the file is not there."""
    path = Path(output_dir) / "items.jsonl"
    if not path.exists():
        return None
    out: dict[str, dict[str, float]] = {}
    for _, item in iter_jsonl(path):
        if item.get("gold_label"):
            out.setdefault(item["case_id"], {})[item["claim_id"]] = float(item["pred_label"] == item["gold_label"])
    return out


def paired_label_gain(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
                      samples: int, seed: int, confidence: float) -> tuple[float, tuple[float, float] | None]:
    """Label accuracy of `after` minus `before` on the gold claims both scored, with a bootstrap interval over cases.

    >>> a = {"c1": {"x": 0.0, "y": 0.0}, "c2": {"z": 1.0}}
    >>> b = {"c1": {"x": 1.0, "y": 0.0}, "c2": {"z": 1.0}}
    >>> round(paired_label_gain(a, b, 100, 0, 0.95)[0], 3)
    0.333
    """
    groups = [[(before[case][claim], after[case][claim]) for claim in sorted(before[case]) if claim in after[case]]
              for case in sorted(before) if case in after]
    return paired_gain(groups, samples, seed, confidence)


def _interval(point: float | None, bounds: tuple[float, float] | None, signed: bool = False) -> str | None:
    if point is None:
        return None
    text = f"{point:+.3f}" if signed else f"{point:.3f}"
    return text if bounds is None else (f"{text} [{bounds[0]:+.3f}, {bounds[1]:+.3f}]" if signed
                                        else f"{text} [{bounds[0]:.3f}, {bounds[1]:.3f}]")


def rounds_rows(steps: Sequence[Mapping], method: str, samples: int, seed: int, confidence: float) -> list[dict]:
    """One row per evaluation: round, compiled stages, the stage optimized just before it (optimizer, its own test
    gain), claims, label accuracy and interval, paired gains, wrong labels and their blame by `method`."""
    evaluations = [s for s in steps if s["kind"] == "evaluate"]
    optimized = {s["round"]: s for s in steps if s["kind"] in ("optimize", "train")}
    correct = [correct_by_case(s["output_dir"]) if s.get("output_dir") else None for s in evaluations]
    rows = []
    for index, step in enumerate(evaluations):
        split, metrics = step.get("split", "test"), step["metrics"]
        row: dict = {"round": step["round"], "run_id": step.get("run_id"),
                     "compiled": ", ".join([*sorted(step.get("programs") or {}),
                                            *(f"{s} (adapter)" for s in sorted(step.get("adapters") or {}))]) or "none",
                     "claims": metrics.get(f"{split}/items"), "cases": metrics.get(f"{split}/cases"),
                     "label_accuracy": metrics.get(f"{split}/label/accuracy"),
                     "label_accuracy_ci": _pair(metrics, f"{split}/label/accuracy"),
                     "label_macro_f1": metrics.get(f"{split}/label/macro_f1"),
                     "risk_coverage": metrics.get(f"{split}/e2e/risk_coverage"),
                     "false_alarm_rate": metrics.get(f"{split}/e2e/false_alarm_rate"),
                     "bad_items": metrics.get("attr/bad_items"),
                     "blame": {s: int(metrics.get(f"attr/{method}/{s}/count", 0.0)) for s in SHOWN},
                     "reused_from": step.get("reused_from")}
        opt = optimized.get(step["round"])
        if opt is not None and opt["kind"] == "train":  # the recipe's own test scores: base vs adapter, paired
            m = opt.get("metrics", {})
            row["optimized"] = f"{opt['stage']} (trained: {opt.get('recipe', '?')})"
            row["stage_test_before"], row["stage_test_after"] = m.get("base/test/score"), m.get("test/score")
            low, high = m.get("test/paired_gain_low"), m.get("test/paired_gain_high")
            row["stage_test_gain_ci"] = (low, high) if low is not None and high is not None else None
        elif opt is not None:
            m = opt.get("metrics", {})
            kept = (step.get("programs") or {}).get(opt["stage"]) == opt.get("program_path")
            row["optimized"] = f"{opt['stage']} ({opt.get('optimizer', '?')})" + ("" if kept else ", not adopted")
            row["stage_test_before"], row["stage_test_after"] = m.get("test/score_before"), m.get("test/score_after")
            row["stage_test_gain_ci"] = _pair(m, "test/delta")
        for key, other in (("gain_vs_previous", index - 1), ("gain_vs_first", 0)):
            if index > 0 and other >= 0 and correct[index] is not None and correct[other] is not None:
                gain, bounds = paired_label_gain(correct[other], correct[index], samples, seed, confidence)
                row[key], row[f"{key}_ci"] = gain, bounds
        rows.append(row)
    return rows


def _pair(metrics: Mapping[str, float], name: str) -> tuple[float, float] | None:
    low, high = metrics.get(f"{name}_ci_low"), metrics.get(f"{name}_ci_high")
    return (low, high) if low is not None and high is not None else None


def rounds_markdown(rows: Sequence[Mapping], method: str) -> str:
    """The rounds' table, then the blame table (wrong labels per stage by `method`)."""
    header = ["round", "compiled stages", "optimized before it", "stage test score (its own metric)", "claims (cases)",
              "label accuracy", "gain vs previous (paired)", "gain vs round 0 (paired)", "risk coverage",
              "false alarms", "MLflow run"]
    table = []
    for row in rows:
        stage = None
        if row.get("optimized") and row.get("stage_test_after") is not None:
            before = "-" if row.get("stage_test_before") is None else f"{row['stage_test_before']:.3f}"
            stage = (f"{before} -> {row['stage_test_after']:.3f}"
                     + (f", gain [{row['stage_test_gain_ci'][0]:+.3f}, {row['stage_test_gain_ci'][1]:+.3f}]"
                        if row.get("stage_test_gain_ci") else ""))
        claims = None if row["claims"] is None else f"{int(row['claims'])} ({int(row['cases'] or 0)})"
        table.append([row["round"], row["compiled"], row.get("optimized", "-"), stage, claims,
                      _interval(row["label_accuracy"], row["label_accuracy_ci"]),
                      _interval(row.get("gain_vs_previous"), row.get("gain_vs_previous_ci"), signed=True),
                      _interval(row.get("gain_vs_first"), row.get("gain_vs_first_ci"), signed=True),
                      row["risk_coverage"], row["false_alarm_rate"],
                      (row["run_id"] or "")[:8] + ("" if row.get("reused_from") is None
                                                   else f" (round {row['reused_from']}'s, reused)")])
    blamed = [s for s in SHOWN if any(r["blame"].get(s) for r in rows)]
    blame_rows = [[r["round"], int(r["bad_items"] or 0)] + [
        f"{r['blame'][s]} ({r['blame'][s] / r['bad_items']:.0%})" if r["bad_items"] else "0" for s in blamed]
        for r in rows]
    return (markdown_table(header, table) + f"\n\nWrong labels per blamed stage ({method}):\n\n"
            + markdown_table(["round", "wrong labels"] + blamed, blame_rows))


def rounds_figure(steps: Sequence[Mapping], title: str):
    """evaluate's stacked blame bars (factlab.evals.compare), one bar per evaluation of the loop."""
    from factlab.evals.compare import RunMetrics, comparison_figure

    runs = []
    for step in (s for s in steps if s["kind"] == "evaluate"):
        compiled = "+".join(sorted(step.get("programs") or {})) or "as written"
        runs.append(RunMetrics(step.get("run_id") or "", f"round {step['round']}: {compiled}",
                               step.get("split", "test"), step["metrics"]))
    return comparison_figure(runs, title)
