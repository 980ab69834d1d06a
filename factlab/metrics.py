"""Classification metrics of a distilled model: accuracy, macro-F1, balanced accuracy, per-class precision /
recall / F1 and the confusion matrix. Pure functions over label lists (no numpy / sklearn needed).

Macro-F1 averages over the classes present in the gold or the predictions (as scikit-learn does); balanced accuracy
is the mean recall over the classes present in the gold.
"""

from __future__ import annotations

from collections.abc import Sequence


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> list[list[int]]:
    """Counts[i][j] of gold labels[i] predicted as labels[j].

    >>> confusion(["a", "a", "b"], ["a", "b", "b"], ["a", "b"])
    [[1, 1], [0, 1]]
    """
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, pred, strict=True):
        if g not in index or p not in index:
            raise ValueError(f"label {g if g not in index else p!r} is not one of {', '.join(labels)}")
        matrix[index[g]][index[p]] += 1
    return matrix


def per_class(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support per label (0.0 where undefined).

    >>> per_class(["a", "a", "b"], ["a", "b", "b"], ["a", "b"])["b"]
    {'precision': 0.5, 'recall': 1.0, 'f1': 0.6666666666666666, 'support': 1}
    """
    matrix = confusion(gold, pred, labels)
    out = {}
    for i, label in enumerate(labels):
        tp = matrix[i][i]
        predicted = sum(row[i] for row in matrix)
        support = sum(matrix[i])
        precision = tp / predicted if predicted else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[label] = {"precision": precision, "recall": recall, "f1": f1, "support": support}
    return out


def classification_metrics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """accuracy, macro_f1, balanced_accuracy and n (the headline numbers; see per_class for the rest).

    >>> m = classification_metrics(["a", "a", "a", "b"], ["a", "a", "a", "a"], ["a", "b", "c"])
    >>> m["accuracy"], m["balanced_accuracy"], round(m["macro_f1"], 3), m["n"]
    (0.75, 0.5, 0.429, 4)
    """
    if not gold:
        return {"accuracy": 0.0, "macro_f1": 0.0, "balanced_accuracy": 0.0, "n": 0}
    classes = per_class(gold, pred, labels)
    seen_gold = set(gold)
    present = [label for label in labels if label in seen_gold or label in set(pred)]
    return {
        "accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold),
        "macro_f1": sum(classes[label]["f1"] for label in present) / len(present),
        "balanced_accuracy": sum(classes[label]["recall"] for label in labels if label in seen_gold) / len(seen_gold),
        "n": len(gold),
    }


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
