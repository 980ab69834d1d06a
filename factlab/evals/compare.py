"""Compare evaluate.py runs read back from MLflow: per-stage metrics and attribution shares side by side, with the
delta of each run against the first (the baseline), and the stacked error distributions as a figure.

Used by scripts/compare_runs.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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
