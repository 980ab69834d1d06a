"""Classification metrics, one definition for evaluation, optimisation and training: F1, macro-F1, balanced
accuracy, per-class precision / recall / F1, confusion counts, seeded bootstrap intervals, Wilson intervals, and the
confusion figure. Pure functions over label lists (numpy only for the bootstrap).

Macro-F1 averages over the classes present in the gold or the predictions (as scikit-learn does); a predicted value
outside the classes (evaluation's `missed`) is simply wrong. Balanced accuracy is the mean recall over the classes
present in the gold.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence


def f1(precision: float, recall: float) -> float:
    """Harmonic mean, 0 when both are 0.

    >>> f1(0.5, 1.0)
    0.6666666666666666
    """
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def confusion_counts(gold: Sequence[str], pred: Sequence[str], rows: Sequence[str], cols: Sequence[str]) -> dict:
    """Counts gold row -> predicted column (values outside rows / cols are not counted).

    >>> confusion_counts(["a", "b"], ["a", "a"], ["a", "b"], ["a", "b"])
    {'a': {'a': 1, 'b': 0}, 'b': {'a': 1, 'b': 0}}
    """
    counts = Counter(zip(gold, pred, strict=True))
    return {r: {c: counts[(r, c)] for c in cols} for r in rows}


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> list[list[int]]:
    """Counts[i][j] of gold labels[i] predicted as labels[j]; a label outside `labels` is an error.

    >>> confusion(["a", "a", "b"], ["a", "b", "b"], ["a", "b"])
    [[1, 1], [0, 1]]
    """
    outside = next((x for x in (*gold, *pred) if x not in set(labels)), None)
    if outside is not None:
        raise ValueError(f"label {outside!r} is not one of {', '.join(labels)}")
    table = confusion_counts(gold, pred, labels, labels)
    return [[table[g][p] for p in labels] for g in labels]


def per_class(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support per label (0.0 where undefined); predictions outside `labels` count as
    wrong for every label.

    >>> per_class(["a", "a", "b"], ["a", "b", "b"], ["a", "b"])["b"]
    {'precision': 0.5, 'recall': 1.0, 'f1': 0.6666666666666666, 'support': 1}
    """
    out = {}
    pairs = list(zip(gold, pred, strict=True))
    for label in labels:
        tp = sum(1 for g, p in pairs if g == label and p == label)
        predicted = sum(1 for _, p in pairs if p == label)
        support = sum(1 for g, _ in pairs if g == label)
        precision = tp / predicted if predicted else 0.0
        recall = tp / support if support else 0.0
        out[label] = {"precision": precision, "recall": recall, "f1": f1(precision, recall), "support": support}
    return out


def macro_f1(gold: Sequence[str], pred: Sequence[str], classes: Sequence[str]) -> float | None:
    """Mean per-class F1 over the classes of `classes` that occur in gold or prediction. None for no items.

    >>> macro_f1(["a", "a", "b"], ["a", "b", "b"], ["a", "b", "c"])
    0.6666666666666666
    >>> macro_f1(["a"], ["missed"], ["a", "b"])
    0.0
    """
    if not gold:
        return None
    present = [c for c in classes if c in set(gold) | set(pred)]
    scores = per_class(gold, pred, present)
    return sum(s["f1"] for s in scores.values()) / len(present) if present else 0.0


def balanced_accuracy(gold: Sequence[str], pred: Sequence[str]) -> float | None:
    """Mean recall over the classes present in gold. None for no items.

    >>> balanced_accuracy(["a", "a", "a", "b"], ["a", "a", "a", "a"])
    0.5
    """
    if not gold:
        return None
    recalls = per_class(gold, pred, sorted(set(gold)))
    return sum(r["recall"] for r in recalls.values()) / len(recalls)


def binary_f1(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """F1 of the positive class over (gold, pred) pairs.

    >>> binary_f1([(True, True), (True, False), (False, True)])
    0.5
    """
    if not pairs:
        return None
    return per_class([bool(g) for g, _ in pairs], [bool(p) for _, p in pairs], [True])[True]["f1"]


def classification_metrics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """accuracy, macro_f1, balanced_accuracy and n (the headline numbers; see per_class for the rest).

    >>> m = classification_metrics(["a", "a", "a", "b"], ["a", "a", "a", "a"], ["a", "b", "c"])
    >>> m["accuracy"], m["balanced_accuracy"], round(m["macro_f1"], 3), m["n"]
    (0.75, 0.5, 0.429, 4)
    """
    if not gold:
        return {"accuracy": 0.0, "macro_f1": 0.0, "balanced_accuracy": 0.0, "n": 0}
    confusion(gold, pred, labels)  # every value must be a known label
    return {
        "accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold),
        "macro_f1": macro_f1(gold, pred, labels),
        "balanced_accuracy": balanced_accuracy(gold, pred),
        "n": len(gold),
    }


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; floats to 3 decimals, None as an empty cell.

    >>> print(markdown_table(["a", "b"], [["x", 0.5], ["y", None]]))
    | a | b |
    |---|---|
    | x | 0.500 |
    | y |  |
    """
    def cell(value: object) -> str:
        if value is None:
            return ""
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def bootstrap_ci(units: Sequence, statistic: Callable[[Sequence], Mapping[str, float | None]], names: Sequence[str],
                 samples: int, seed: int, confidence: float) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of `statistic(units)[name]`, resampling units (cases) with replacement.

    Args:
        units: the resampling units.
        statistic: units -> metrics.
        names: the metrics to get intervals for.
        samples: bootstrap samples.
        seed: numpy seed (the same seed gives the same intervals).
        confidence: e.g. 0.95.

    Returns:
        name -> (low, high); a metric that is None in every sample is left out.

    >>> stat = lambda us: {"mean": sum(us) / len(us)}
    >>> bootstrap_ci([0, 1] * 10, stat, ["mean"], 200, 0, 0.9) == bootstrap_ci([0, 1] * 10, stat, ["mean"], 200, 0, 0.9)
    True
    """
    import numpy as np

    if not units or samples < 1:
        return {}
    rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(samples):
        picked = [units[i] for i in rng.integers(0, len(units), size=len(units))]
        metrics = statistic(picked)
        for name in names:
            if metrics.get(name) is not None:
                values[name].append(float(metrics[name]))
    tail = (1 - confidence) / 2
    return {name: (float(np.quantile(v, tail)), float(np.quantile(v, 1 - tail))) for name, v in values.items() if v}


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n trials (95% at the default z), clipped to [0, 1]; None when n
    is 0. The interval of the small gold benchmarks, where a bootstrap over a few dozen cases says little.

    >>> [round(v, 3) for v in wilson_interval(8, 10)]
    [0.49, 0.943]
    >>> [round(v, 3) for v in wilson_interval(17, 18)]
    [0.742, 0.99]
    >>> wilson_interval(0, 0) is None
    True
    """
    if n == 0:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_gain(groups: Sequence[Sequence[tuple[float, float]]], samples: int, seed: int,
                confidence: float) -> tuple[float, tuple[float, float] | None]:
    """The gain of b over a, sum(b - a) / pairs, and its percentile bootstrap interval resampling whole groups: two
    systems scored on the same items, items grouped by the unit that was sampled (the claims of one case), so
    the interval respects that claims of a case fail together. Groups of one pair give the usual paired interval.

    Args:
        groups: per unit, its (a, b) score pairs (empty units count for nothing).
        samples, seed, confidence: as `bootstrap_ci`.

    Returns:
        (gain, (low, high)); the interval is None when there are no pairs.

    >>> paired_gain([[(0, 1), (0, 1)], [(1, 1)], [(0, 0)]], 200, 0, 0.95)[0]
    0.5
    >>> paired_gain([[(1, 1)], [(0, 0)]], 200, 0, 0.95)
    (0.0, (0.0, 0.0))
    >>> paired_gain([], 200, 0, 0.95)
    (0.0, None)
    """
    def gain(units: Sequence[Sequence[tuple[float, float]]]) -> dict[str, float | None]:
        pairs = [pair for unit in units for pair in unit]
        return {"gain": sum(b - a for a, b in pairs) / len(pairs) if pairs else None}

    point = gain(groups)["gain"]
    if point is None:
        return 0.0, None
    return point, bootstrap_ci([list(g) for g in groups], gain, ["gain"], samples, seed, confidence).get("gain")


def confusion_figure(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str):
    """A matplotlib Figure of the confusion matrix (rows gold, columns predicted), counts in the cells."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(1.2 * len(labels) + 2.5, 1.0 * len(labels) + 2))
    axes = figure.add_subplot()
    image = axes.imshow(matrix, cmap="Blues")
    axes.set_xticks(range(len(labels)), labels, rotation=40, ha="right")
    axes.set_yticks(range(len(labels)), labels)
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    axes.set_title(title)
    peak = max((max(row) for row in matrix), default=0)
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            axes.text(j, i, str(count), ha="center", va="center", color="white" if count > peak / 2 else "black")
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    return figure


class SetScores:
    """Precision / recall of predicted against gold item sets, document by document, per group (e.g. "all" and the
    language): the tally of the gold benchmarks of the deterministic layers (factlab.evals.layer_gold: the consistency
    layer and the common-cause grouping).

    >>> scores = SetScores()
    >>> scores.add("d1", ["all", "en"], want={"a", "b"}, got={"a", "c"})
    >>> scores.add("d2", ["all", "zh"], want=set(), got=set())
    >>> row = scores.table(["all"])["all"]
    >>> row["gold"], row["precision"], row["recall"], row["false_alarm_docs"], row["docs_with_extra"]
    (2, 0.5, 0.5, '0 / 1', '1 / 2')
    >>> scores.misses, scores.extras
    ([('d1', 'b')], [('d1', 'c')])
    """

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.misses: list[tuple[str, object]] = []
        self.extras: list[tuple[str, object]] = []

    def add(self, doc_id: str, groups: Sequence[str], want: set, got: set) -> None:
        """One document's gold and predicted items, counted in each of `groups`."""
        for key in groups:
            self.counts[(key, "tp")] += len(want & got)
            self.counts[(key, "fp")] += len(got - want)
            self.counts[(key, "fn")] += len(want - got)
            self.counts[(key, "docs")] += 1
            self.counts[(key, "clean_docs")] += not want
            self.counts[(key, "false_alarm_docs")] += (not want) and bool(got)
            self.counts[(key, "docs_with_extra")] += bool(got - want)
        self.misses += [(doc_id, k) for k in sorted(want - got, key=str)]
        self.extras += [(doc_id, k) for k in sorted(got - want, key=str)]

    def table(self, groups: Sequence[str]) -> dict[str, dict]:
        """Per group: docs, gold items, precision, recall (None without any), clean docs with a prediction, and
        docs with a prediction not in the gold."""
        out = {}
        for key in groups:
            tp, fp, fn = (self.counts[(key, k)] for k in ("tp", "fp", "fn"))
            clean, alarms = self.counts[(key, "clean_docs")], self.counts[(key, "false_alarm_docs")]
            out[key] = {"docs": self.counts[(key, "docs")], "gold": tp + fn,
                        "precision": tp / (tp + fp) if tp + fp else None,
                        "recall": tp / (tp + fn) if tp + fn else None,
                        "false_alarm_docs": f"{alarms} / {clean}",
                        "docs_with_extra": f"{self.counts[(key, 'docs_with_extra')]} / {self.counts[(key, 'docs')]}"}
        return out

    def markdown(self, groups: Sequence[str], gold: str, alarms: str, alarms_key: str) -> list[str]:
        """The table of `table(groups)` as Markdown lines, then one line per missed and extra item; `gold` and
        `alarms` name the gold-count and alarm columns, `alarms_key` picks false_alarm_docs or docs_with_extra."""
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        lines = [f"| lang | docs | {gold} | precision | recall | {alarms} |", "|---|---|---|---|---|---|"]
        lines += [f"| {key} | {row['docs']} | {row['gold']} | {fmt(row['precision'])} | {fmt(row['recall'])} | "
                  f"{row[alarms_key]} |" for key, row in self.table(groups).items()]
        lines += [f"missed  {doc_id}: {item}" for doc_id, item in self.misses]
        return lines + [f"extra   {doc_id}: {item}" for doc_id, item in self.extras]
