"""One program per vertical against one shared program, read back from one optimize.py sweep
(conf/experiment/compare_extract_vertical.yaml): for each vertical, its own compiled program, the shared compiled
program and the program as written on that vertical's test examples, paired example by example.

A run compiled with `vertical=<name>` carries the `vertical` tag and its test split holds only that vertical's
examples; the shared run (no tag) was tested on every test example, so it holds each vertical's too and pairs with
them by example key (case id + inputs). Used by scripts/vertical_table.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from factlab.metrics import markdown_table
from factlab.optimize.sweep import SweepRun, gain_text, score_text

HEADER = ["vertical", "test examples", "as written", "shared program", "own program", "own - shared (paired)",
          "own - as written (paired)", "shared - as written (paired)", "own run", "shared run"]


def _latest(runs: Sequence[SweepRun], optimizer: str | None) -> tuple[SweepRun | None, dict[str, SweepRun]]:
    """The last finished shared run and the last finished run of each vertical (of `optimizer`, if given)."""
    shared, own = None, {}
    for run in runs:
        if not run.finished or (optimizer is not None and run.optimizer != optimizer):
            continue
        vertical = run.tags.get("vertical")
        if vertical and vertical != "None":
            own[vertical] = run
        else:
            shared = run
    return shared, own


def _by_key(run: SweepRun, label: str, split: str) -> dict[str, list[float]]:
    pool: dict[str, list[float]] = {}
    for key, score in zip(run.keys[(label, split)], run.scores[(label, split)], strict=True):
        pool.setdefault(key, []).append(score)
    return pool


def paired_triples(own: SweepRun, shared: SweepRun, split: str = "test") -> list[tuple[float, float, float]]:
    """(as written, shared, own) per example of the vertical's run, matched by key; an example the shared run did
    not score (it was capped) is left out.

    >>> own = SweepRun("o", "gepa", "FINISHED", {}, {"vertical": "law"},
    ...                scores={("baseline", "test"): [0.5, 0.0], ("compiled", "test"): [1.0, 0.5]},
    ...                keys={("baseline", "test"): ["a|", "b|"], ("compiled", "test"): ["a|", "b|"]})
    >>> shared = SweepRun("s", "gepa", "FINISHED", {}, {},
    ...                   scores={("baseline", "test"): [0.0, 0.0, 0.5], ("compiled", "test"): [0.2, 0.3, 0.7]},
    ...                   keys={("baseline", "test"): ["z|", "b|", "a|"], ("compiled", "test"): ["z|", "b|", "a|"]})
    >>> paired_triples(own, shared)
    [(0.5, 0.7, 1.0), (0.0, 0.3, 0.5)]
    """
    base, theirs = _by_key(own, "baseline", split), _by_key(shared, "compiled", split)
    out = []
    for key, score in zip(own.keys[("compiled", split)], own.scores[("compiled", split)], strict=True):
        if base.get(key) and theirs.get(key):
            out.append((base[key].pop(0), theirs[key].pop(0), score))
    return out


def vertical_rows(runs: Sequence[SweepRun], optimizer: str | None = None, split: str = "test") -> list[list[object]]:
    """One row per vertical with an own and a shared run, then one row pooling them (every vertical's examples).

    Raises:
        ValueError: no finished shared run, or no finished per-vertical run.
    """
    shared, own = _latest(runs, optimizer)
    which = f" of optimizer {optimizer!r}" if optimizer else ""
    if shared is None:
        raise ValueError(f"no finished shared run (vertical=null){which} in the sweep")
    if not own:
        raise ValueError(f"no finished per-vertical run (vertical=<name>){which} in the sweep")
    rows, pooled = [], []
    for vertical, run in sorted(own.items()):
        triples = paired_triples(run, shared, split)
        pooled += triples
        rows.append(_row(vertical, triples, run.run_id[:8], shared.run_id[:8]))
    if len(own) > 1:
        rows.append(_row(f"all {len(own)}", pooled, "-", shared.run_id[:8]))
    return rows


def _row(name: str, triples: list[tuple[float, float, float]], own_id: str, shared_id: str) -> list[object]:
    if not triples:
        return [name, 0, *([None] * 6), own_id, shared_id]
    seed, shared, own = ([t[i] for t in triples] for i in range(3))
    return [name, len(triples), score_text(seed), score_text(shared), score_text(own), gain_text(shared, own)[0],
            gain_text(seed, own)[0], gain_text(seed, shared)[0], own_id, shared_id]


def vertical_markdown(sweep_id: str, runs: Sequence[SweepRun], optimizer: str | None = None) -> str:
    """The table with how it was computed."""
    from factlab.optimize.sweep import CONFIDENCE, SAMPLES

    return (f"Sweep `{sweep_id}`: one program per vertical vs one shared program on each vertical's test examples "
            f"({int(CONFIDENCE * 100)}% percentile bootstrap intervals over examples, {SAMPLES} samples; differences "
            "paired over the same examples)\n\n" + markdown_table(HEADER, vertical_rows(runs, optimizer)) + "\n")
