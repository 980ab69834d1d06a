"""Figures and text tables of evaluations: the attribution bar chart of one run, the stacked error distributions of
several runs, and Markdown tables. matplotlib `Figure` objects only (no pyplot global state)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from factlab.evals.scores import METHODS
from factlab.metrics import markdown_table


def attribution_figure(metrics: Mapping[str, float], title: str):
    """Bad items blamed on each stage, one bar per method, from `attr/<method>/<stage>/count` metrics."""
    from matplotlib.figure import Figure

    stages = list(dict.fromkeys(s for stages in METHODS.values() for s in stages))
    figure = Figure(figsize=(9, 4), dpi=100)
    axes = figure.subplots()
    width = 0.4
    for offset, method in enumerate(METHODS):
        counts = [metrics.get(f"attr/{method}/{s}/count", 0.0) for s in stages]
        axes.bar([i + (offset - 0.5) * width for i in range(len(stages))], counts, width, label=method)
    axes.set_xticks(range(len(stages)))
    axes.set_xticklabels(stages, rotation=35, ha="right")
    axes.set_ylabel("bad items blamed")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    return figure


def distribution_figure(runs: Sequence[tuple[str, Mapping[str, float], float]], title: str):
    """Stacked bars of wrong labels per blamed stage as a share of all gold claims, one bar per run, one panel per
    method: a bar's height is the run's wrong-label rate, its colours where the blame went.

    Args:
        runs: (label, metrics, number of gold claims) per run, in display order; metrics hold
            `attr/<method>/<stage>/count`.
        title: the figure title.
    """
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7 + 1.2 * len(runs), 4.5), dpi=100)
    panels = figure.subplots(1, len(METHODS), sharey=True, squeeze=False)[0]
    colours: dict[str, str] = {}
    palette = [f"C{i}" for i in range(10)] + ["#444444", "#bbbbbb"]
    for axes, (method, stages) in zip(panels, METHODS.items(), strict=True):
        bottoms = [0.0] * len(runs)
        for stage in stages:
            rates = [(m.get(f"attr/{method}/{stage}/count") or 0.0) / items if items else 0.0 for _, m, items in runs]
            if not any(rates):
                continue
            colour = colours.setdefault(stage, palette[len(colours) % len(palette)])
            axes.bar(range(len(runs)), rates, bottom=bottoms, color=colour, label=stage)
            bottoms = [b + r for b, r in zip(bottoms, rates, strict=True)]
        axes.set_xticks(range(len(runs)))
        axes.set_xticklabels([label for label, _, _ in runs], rotation=20, ha="right", fontsize=8)
        axes.set_title(method)
        if axes.get_legend_handles_labels()[0]:  # no bar, no legend (nothing blamed by this method)
            axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    panels[0].set_ylabel("wrong labels / gold claims, by blamed stage")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def attribution_table(metrics: Mapping[str, float]) -> str:
    """Markdown table: stage x method, count and share of the bad items."""
    stages = list(dict.fromkeys(s for stages in METHODS.values() for s in stages))
    rows = []
    for stage in stages:
        row: list[object] = [stage]
        for method, allowed in METHODS.items():
            if stage in allowed:
                count = metrics.get(f"attr/{method}/{stage}/count", 0.0)
                row.append(f"{int(count)} ({metrics.get(f'attr/{method}/{stage}/share', 0.0):.0%})")
            else:
                row.append("")
        rows.append(row)
    return markdown_table(["stage", *METHODS], rows)
