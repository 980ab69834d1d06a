"""The per-step curves of a GRPO run as one figure (`rl_curves.png`): each curve, its moving average, and the held-out
values before and after training.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def moving_average(values: Sequence[float | None], window: int) -> list[float | None]:
    """The trailing mean of the last `window` values seen (None values skipped; None until one is seen).

    >>> moving_average([1.0, 0.0, None, 1.0], 2)
    [1.0, 0.5, 0.5, 0.5]
    """
    out, seen = [], []
    for value in values:
        if value is not None:
            seen.append(float(value))
        tail = seen[-window:]
        out.append(sum(tail) / len(tail) if tail else None)
    return out


def curves_figure(curves: Mapping[str, Sequence[float | None]], window: int, title: str,
                  before: Mapping[str, float | None] | None = None, after: Mapping[str, float | None] | None = None):
    """One panel per curve: the per-step values, their moving average, and the held-out value before and after
    training as horizontal lines where known."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * len(curves), 3.6), dpi=100)
    panels = figure.subplots(1, len(curves), squeeze=False)[0]
    for axes, (name, values) in zip(panels, curves.items(), strict=True):
        steps = list(range(1, len(values) + 1))
        axes.plot(steps, [v if v is not None else float("nan") for v in values], ".", alpha=0.4, label="per step")
        smooth = moving_average(values, window)
        axes.plot(steps, [v if v is not None else float("nan") for v in smooth], "-", label=f"mean of last {window}")
        for label, held_out, style in (("held-out before", (before or {}).get(name), ":"),
                                       ("held-out after", (after or {}).get(name), "--")):
            if held_out is not None:
                axes.axhline(float(held_out), linestyle=style, color="black", linewidth=1, label=label)
        axes.set_title(name)
        axes.set_xlabel("GRPO step")
        axes.set_ylim(-0.05, 1.05)
        axes.legend(fontsize=7)
    figure.suptitle(title)
    figure.tight_layout()
    return figure
