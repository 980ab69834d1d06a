"""Compare evaluate.py runs read back from MLflow: per-stage metrics and attribution shares side by side, with the
delta of each run against the first (the baseline), and the stacked error distributions as a figure; `main` is the
command line (scripts/compare_runs.py).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from factlab.evals.report import distribution_figure
from factlab.evals.scores import METHODS
from factlab.metrics import markdown_table

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
EXPERIMENT_PREFIX = "evaluate/"


@dataclass
class RunMetrics:
    run_id: str
    label: str
    split: str
    metrics: dict[str, float]


def find_runs(client, selectors: Sequence[str], experiments: Sequence[str] | None = None) -> list[RunMetrics]:
    """Runs named by id, or matched by MLflow filter strings (`tags.dataset = 'bundled'`), in the order given;
    a filter's runs oldest first.

    Args:
        client: an `mlflow.MlflowClient`.
        selectors: run ids (32 hex digits) and / or filter strings.
        experiments: experiment names a filter searches; None = every `evaluate/*` experiment.

    Raises:
        ValueError: nothing selected, an unknown experiment, or a filter that matches no run.
    """
    if not selectors:
        raise ValueError("compare_runs: pass run ids or an MLflow filter, e.g. \"tags.dataset = 'bundled'\"")
    if experiments is None:
        exp_ids = [e.experiment_id for e in client.search_experiments() if e.name.startswith(EXPERIMENT_PREFIX)]
    else:
        exp_ids = []
        for name in experiments:
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise ValueError(f"compare_runs: no MLflow experiment {name!r} in {client.tracking_uri}")
            exp_ids.append(exp.experiment_id)
    runs = []
    for selector in selectors:
        if RUN_ID.match(selector):
            runs.append(client.get_run(selector))
            continue
        found = client.search_runs(exp_ids, filter_string=selector, order_by=["attributes.start_time ASC"])
        if not found:
            raise ValueError(f"compare_runs: filter {selector!r} matches no run in experiments {exp_ids} of "
                             f"{client.tracking_uri}")
        runs.extend(found)
    seen, out = set(), []
    for run in runs:
        if run.info.run_id in seen:
            continue
        seen.add(run.info.run_id)
        tags = run.data.tags
        label = f"{run.info.run_name or run.info.run_id[:8]} ({run.info.run_id[:6]})"
        out.append(RunMetrics(run.info.run_id, label, tags.get("split", "test"), dict(run.data.metrics)))
    return out


def compared_metrics(runs: Sequence[RunMetrics]) -> list[str]:
    """The metrics worth a row: per-stage metrics of the evaluated split (no intervals, no counts of cases), the
    bad-item share, and every attribution share that is non-zero in some run."""
    names: list[str] = []
    for run in runs:
        prefix = f"{run.split}/"
        for name in sorted(run.metrics):
            stage_metric = name.startswith(prefix) and "_ci_" not in name
            share = name.startswith("attr/") and name.endswith("/share") and any(
                r.metrics.get(name) for r in runs)
            if (stage_metric or share or name == "attr/bad_share") and name not in names:
                names.append(name)
    order = {method: i for i, method in enumerate(METHODS)}
    return sorted(names, key=lambda n: (n.startswith("attr/"), order.get(n.split("/")[1], -1), n))


def comparison_table(runs: Sequence[RunMetrics]) -> str:
    """Markdown: one row per metric, one column per run, and a delta column per run against the first."""
    header = ["metric", runs[0].label]
    for run in runs[1:]:
        header += [run.label, "delta"]
    rows = []
    for name in compared_metrics(runs):
        base = runs[0].metrics.get(name)
        row: list[object] = [name, base]
        for run in runs[1:]:
            value = run.metrics.get(name)
            delta = value - base if value is not None and base is not None else None
            row += [value, f"{delta:+.3f}" if delta is not None else None]
        rows.append(row)
    return markdown_table(header, rows)


def comparison_figure(runs: Sequence[RunMetrics], title: str):
    """Stacked bars of each run's wrong labels per blamed stage (share of its gold claims), one panel per method."""
    return distribution_figure([(run.label, run.metrics, run.metrics.get(f"{run.split}/items", 0.0)) for run in runs],
                               title)


def main(argv: list[str] | None = None) -> dict:
    """scripts/compare_runs.py: the table and chart of the selected runs, written to `--out` (and, with `--log`,
    attached to the last run under `compare/<baseline run id>/`); returns the run ids, the table and the folder."""
    parser = argparse.ArgumentParser(description="Compare evaluate.py runs from MLflow: per-stage metrics and "
                                                 "attribution shares side by side with deltas against the first run.")
    parser.add_argument("selectors", nargs="+", help="run ids and / or MLflow filter strings")
    parser.add_argument("--experiment", action="append", help="experiment name to search (repeatable); "
                                                               "default every evaluate/* experiment")
    parser.add_argument("--tracking-uri", help="MLflow store; default the jobs' store (factlab/tracking/store.py)")
    parser.add_argument("--out", help="folder for comparison.md and distributions.png; default "
                                      "outputs/compare/<time>")
    parser.add_argument("--log", action="store_true", help="log the table and chart to the last run")
    args = parser.parse_args(argv)

    import mlflow

    from factlab.tracking.store import tracking_uri

    client = mlflow.MlflowClient(tracking_uri=tracking_uri(args.tracking_uri))
    runs = find_runs(client, args.selectors, args.experiment)
    table = comparison_table(runs)
    figure = comparison_figure(runs, "wrong final labels by blamed stage")
    out = Path(args.out or f"outputs/compare/{datetime.now():%Y-%m-%d_%H-%M-%S}")
    out.mkdir(parents=True, exist_ok=True)
    baseline = runs[0].run_id
    header = "runs: " + ", ".join(f"{r.label} = {r.run_id}" for r in runs) + f"\nbaseline: {baseline}\n\n"
    (out / "comparison.md").write_text(header + table + "\n", encoding="utf-8")
    figure.savefig(out / "distributions.png")
    print(header + table)
    print(f"\nwrote {out / 'comparison.md'} and {out / 'distributions.png'}")
    if args.log:
        for name in ("comparison.md", "distributions.png"):
            client.log_artifact(runs[-1].run_id, str(out / name), artifact_path=f"compare/{baseline}")
        print(f"logged to run {runs[-1].run_id} under compare/{baseline}/")
    return {"runs": [r.run_id for r in runs], "table": table, "out": str(out)}
