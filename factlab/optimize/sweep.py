"""One optimizer sweep read back from MLflow: each optimizer's val / test score with bootstrap intervals, the paired
interval of its test gain over the program as written, its spend (metric calls, LM tokens, wall time) and what
happened to its proposals; a Markdown table and a figure.

The intervals come from the per-example predictions every optimize.py run logs (`predictions/<split>_<label>.jsonl`),
so runs logged before the job wrote intervals itself get them too. `main` is the command line
(scripts/sweep_table.py); the interval metrics are also factlab/optimize/job.py's.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factlab.data.jsonl import jsonl_values
from factlab.metrics import markdown_table

SAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0


def _mean(values: Sequence[float]) -> dict[str, float]:
    return {"mean": sum(values) / len(values)}


def score_interval(scores: Sequence[float], samples: int = SAMPLES, seed: int = SEED,
                   confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean score over examples; None for no examples.

    >>> lo, hi = score_interval([0.0, 1.0] * 25)
    >>> 0.3 < lo < 0.5 < hi < 0.7
    True
    >>> score_interval([]) is None
    True
    """
    from factlab.metrics import bootstrap_ci

    return bootstrap_ci(list(scores), _mean, ["mean"], samples, seed, confidence).get("mean")


def delta_interval(before: Sequence[float], after: Sequence[float], samples: int = SAMPLES, seed: int = SEED,
                   confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The paired bootstrap interval of mean(after - before), the two programs scored on the same examples in the
    same order (an optimizer's gain; sharper than comparing two unpaired intervals).

    >>> delta_interval([0, 0, 1, 1], [0, 0, 1, 1])
    (0.0, 0.0)
    >>> delta_interval([0, 1], [1])
    Traceback (most recent call last):
    ...
    ValueError: paired scores differ in length: 2 before, 1 after
    """
    if len(before) != len(after):
        raise ValueError(f"paired scores differ in length: {len(before)} before, {len(after)} after")
    return score_interval([a - b for a, b in zip(after, before, strict=True)], samples, seed, confidence)


def interval_metrics(reports: Mapping[tuple[str, str], Sequence[Mapping]], splits: Sequence[str]) -> dict[str, float]:
    """MLflow metrics of the intervals: `<split>/score_<before|after>_ci_low|high` and `<split>/delta_ci_low|high`.

    Args:
        reports: (baseline | compiled, split) -> per-example rows with a "score".
        splits: the evaluated splits.
    """
    metrics: dict[str, float] = {}
    for split in splits:
        scores = {label: [float(row["score"]) for row in reports[(label, split)]] for label in ("baseline", "compiled")}
        for label, suffix in (("baseline", "before"), ("compiled", "after")):
            if (ci := score_interval(scores[label])) is not None:
                metrics[f"{split}/score_{suffix}_ci_low"], metrics[f"{split}/score_{suffix}_ci_high"] = ci
        if (ci := delta_interval(scores["baseline"], scores["compiled"])) is not None:
            metrics[f"{split}/delta_ci_low"], metrics[f"{split}/delta_ci_high"] = ci
    return metrics


@dataclass
class SweepRun:
    """One optimize.py run of a sweep, with the per-example scores read from its predictions."""

    run_id: str
    optimizer: str
    status: str
    metrics: dict[str, float]
    tags: dict[str, str]
    scores: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (baseline | compiled, split)
    langs: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    keys: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # which example each score is (pairing)

    @property
    def finished(self) -> bool:
        return ("compiled", "test") in self.scores


def read_predictions(text: str, source: str = "predictions") -> tuple[list[float], list[str], list[str]]:
    """Scores, languages and example keys (case id + inputs: a case holds several examples) of one predictions JSONL
    (`source` names it in the error about a line that is not JSON).

    >>> read_predictions('{"score": 1.0, "lang": "zh", "case_id": "c1", "inputs": "a"}\\n'
    ...                  '{"score": 0.5, "lang": "en"}\\n')
    ([1.0, 0.5], ['zh', 'en'], ['c1|a', '|'])
    """
    rows = [row for _, row in jsonl_values(text.splitlines(), source)]
    return ([float(row["score"]) for row in rows], [str(row.get("lang") or "") for row in rows],
            [f"{row.get('case_id') or ''}|{row.get('inputs') or ''}" for row in rows])


def find_sweep(client, sweep_id: str, experiment_prefix: str = "optimize/") -> list[SweepRun]:
    """Every run tagged `sweep_id` in the `optimize/*` experiments, oldest first, with its logged predictions.

    Raises:
        ValueError: no run carries that sweep id.
    """
    import mlflow

    experiments = [e.experiment_id for e in client.search_experiments() if e.name.startswith(experiment_prefix)]
    found = client.search_runs(experiments, filter_string=f"tags.sweep_id = '{sweep_id}'",
                               order_by=["attributes.start_time ASC"]) if experiments else []
    if not found:
        raise ValueError(f"no optimize.py run is tagged sweep_id={sweep_id!r} in {client.tracking_uri}")
    runs = []
    for run in found:
        sweep_run = SweepRun(run.info.run_id, run.data.tags.get("optimizer", "?"), run.info.status,
                             dict(run.data.metrics), dict(run.data.tags))
        for label in ("baseline", "compiled"):
            for split in ("val", "test"):
                try:
                    path = mlflow.artifacts.download_artifacts(
                        run_id=run.info.run_id, artifact_path=f"predictions/{split}_{label}.jsonl",
                        tracking_uri=client.tracking_uri)
                except Exception:  # noqa: BLE001 - an unfinished run has no predictions yet
                    continue
                scores, langs, keys = read_predictions(Path(path).read_text(), str(path))
                sweep_run.scores[(label, split)], sweep_run.langs[(label, split)] = scores, langs
                sweep_run.keys[(label, split)] = keys
        runs.append(sweep_run)
    return runs


def score_text(scores: Sequence[float] | None) -> str | None:
    if not scores:
        return None
    lo, hi = score_interval(scores)
    return f"{sum(scores) / len(scores):.3f} [{lo:.3f}, {hi:.3f}]"


def gain_text(before: Sequence[float], after: Sequence[float]) -> tuple[str, float, float]:
    """mean(after) - mean(before) as text with its paired interval, and the interval's ends."""
    lo, hi = delta_interval(before, after)
    gain = sum(after) / len(after) - sum(before) / len(before)
    return f"{gain:+.3f} [{lo:+.3f}, {hi:+.3f}]", lo, hi


def _delta(run: SweepRun, split: str) -> str | None:
    before, after = run.scores.get(("baseline", split)), run.scores.get(("compiled", split))
    if not before or not after or len(before) != len(after):
        return None
    return gain_text(before, after)[0]


def _by_lang(run: SweepRun, split: str) -> str | None:
    scores, langs = run.scores.get(("compiled", split)), run.langs.get(("compiled", split))
    if not scores:
        return None
    parts = []
    for lang in sorted(set(langs)):
        picked = [s for s, g in zip(scores, langs, strict=True) if g == lang]
        parts.append(f"{lang or '?'} {sum(picked) / len(picked):.3f} ({len(picked)})")
    return ", ".join(parts)


def _tokens(metrics: Mapping[str, float], role: str) -> str | None:
    prompt, completion = (metrics.get(f"lm/{role}/compile_{key}_tokens") for key in ("prompt", "completion"))
    if prompt is None and completion is None:
        return None
    return f"{int(prompt or 0):,}+{int(completion or 0):,}"


HEADER = ["optimizer", "val after", "test after", "test gain (paired)", "test by language", "metric calls",
          "compile min", "student tokens in+out", "reflector tokens in+out", "proposals kept / dropped / rejected",
          "status", "MLflow run"]


def _proposals(metrics: Mapping[str, float]) -> str | None:
    """GEPA's proposals: kept (became a candidate) / dropped (scored on the minibatch, not better) / rejected (by the
    guard, never scored)."""
    if "gepa/proposals_accepted" not in metrics:
        return None
    kept, accepted = int(metrics.get("gepa/proposals_kept", 0)), int(metrics["gepa/proposals_accepted"])
    return f"{kept} / {accepted - kept} / {int(metrics.get('gepa/proposals_rejected', 0))}"


def sweep_rows(runs: Sequence[SweepRun]) -> list[list[object]]:
    """The table's rows: one per run, finished or not (an unfinished run shows its status and spend so far)."""
    rows = []
    for name, run in zip(labels(runs), runs, strict=True):
        metrics = run.metrics
        compile_s = metrics.get("time/compile_s")
        rows.append([
            name, score_text(run.scores.get(("compiled", "val"))),
            score_text(run.scores.get(("compiled", "test"))),
            _delta(run, "test"), _by_lang(run, "test"),
            int(metrics["optimizer/metric_calls"]) if "optimizer/metric_calls" in metrics else None,
            f"{compile_s / 60:.1f}" if compile_s is not None else None,
            _tokens(metrics, "student"), _tokens(metrics, "reflector"), _proposals(metrics),
            "finished" if run.finished else f"unfinished ({run.status})", run.run_id[:8],
        ])
    return rows


def labels(runs: Sequence[SweepRun]) -> list[str]:
    """Each run's name in the tables: its optimizer, and its student, stage backend and stage adapter when the sweep's
    runs have more than one of them.

    >>> runs = [SweepRun("1", "none", "FINISHED", {}, {"student": "local_qwen05"}),
    ...         SweepRun("2", "none", "FINISHED", {}, {"student": "local_qwen15"})]
    >>> labels(runs), labels(runs[:1])
    (['none (local_qwen05)', 'none (local_qwen15)'], ['none'])
    >>> labels([SweepRun("1", "none", "FINISHED", {}, {}), SweepRun("2", "none", "FINISHED", {}, {"lora": "a"}),
    ...         SweepRun("3", "none", "FINISHED", {}, {"backend": "rules"})])
    ['none', 'none (lora a)', 'none (rules)']
    """
    def varies(tag: str) -> bool:
        return len({run.tags.get(tag) for run in runs}) > 1

    out = []
    for run in runs:
        parts = [run.tags.get("student", "?")] if varies("student") else []
        parts += [run.tags["backend"]] if varies("backend") and run.tags.get("backend") else []
        parts += [f"lora {run.tags['lora']}"] if varies("lora") and run.tags.get("lora") else []
        out.append(f"{run.optimizer} ({', '.join(parts)})" if parts else run.optimizer)
    return out


def head_to_head(runs: Sequence[SweepRun], split: str = "test") -> list[list[object]]:
    """Every pair of optimizers, compiled programs compared on the examples both scored: mean(a) - mean(b) with the
    paired interval, and which one the interval separates. The last finished run of each optimizer (and student,
    `labels`) is used (a sweep re-run after a fix keeps its old runs).

    >>> a = SweepRun("a1", "bootstrap", "FINISHED", {}, {}, scores={("compiled", "test"): [1.0, 1.0, 0.0, 1.0] * 10},
    ...              keys={("compiled", "test"): list("wxyz") * 10})
    >>> b = SweepRun("b1", "gepa", "FINISHED", {}, {}, scores={("compiled", "test"): [0.0, 0.0, 0.0, 1.0] * 10},
    ...              keys={("compiled", "test"): list("wxyz") * 10})
    >>> head_to_head([a, b])
    [['bootstrap vs gepa', 40, '+0.500 [+0.350, +0.650]', 'bootstrap']]
    """
    latest: dict[str, SweepRun] = {}
    for name, run in zip(labels(runs), runs, strict=True):
        if ("compiled", split) in run.scores:
            latest[name] = run
    rows = []
    names = list(latest)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            pairs = _paired(latest[first], latest[second], split)
            if not pairs:
                continue
            text, lo, hi = gain_text([y for _, y in pairs], [x for x, _ in pairs])
            rows.append([f"{first} vs {second}", len(pairs), text,
                         first if lo > 0 else second if hi < 0 else "neither (the interval holds 0)"])
    return rows


def _paired(a: SweepRun, b: SweepRun, split: str) -> list[tuple[float, float]]:
    """(a's score, b's score) of the compiled programs per example both scored, matched by example key (a key that
    repeats pairs in order; rows without keys share one key, so they pair by position)."""
    pool: dict[str, list[float]] = {}
    for key, score in zip(b.keys[("compiled", split)], b.scores[("compiled", split)], strict=True):
        pool.setdefault(key, []).append(score)
    return [(x, pool[key].pop(0)) for key, x in zip(a.keys[("compiled", split)], a.scores[("compiled", split)],
                                                     strict=True) if pool.get(key)]


def sweep_markdown(sweep_id: str, runs: Sequence[SweepRun]) -> str:
    """The sweep's table with the split sizes and how the intervals were computed."""
    sizes = next((run for run in runs if run.finished), None)
    size_note = (f"val {len(sizes.scores[('compiled', 'val')])}, test {len(sizes.scores[('compiled', 'test')])} "
                 "examples" if sizes else "no finished run yet")
    return (f"Sweep `{sweep_id}` ({size_note}; {int(CONFIDENCE * 100)}% percentile bootstrap intervals over examples, "
            f"{SAMPLES} samples; the gain is paired: the same test examples before and after)\n\n"
            + markdown_table(HEADER, sweep_rows(runs)) + "\n" + head_to_head_markdown(runs))


def head_to_head_markdown(runs: Sequence[SweepRun], split: str = "test") -> str:
    rows = head_to_head(runs, split)
    if not rows:
        return ""
    return (f"\nHead to head on {split} (the last finished run of each optimizer; paired over the examples both "
            "scored):\n\n" + markdown_table(["a vs b", "examples", "a - b (paired)", "better"], rows) + "\n")


def sweep_figure(sweep_id: str, runs: Sequence[SweepRun]):
    """Val and test score of each finished run with its interval; the program as written as a dashed line."""
    from matplotlib.figure import Figure

    names = dict(zip((run.run_id for run in runs), labels(runs), strict=True))
    finished = [run for run in runs if run.finished]
    figure = Figure(figsize=(7, 1.0 + 0.6 * max(len(finished), 1)))
    axes = figure.add_subplot()
    for offset, split, color in ((-0.15, "val", "tab:blue"), (0.15, "test", "tab:orange")):
        for i, run in enumerate(finished):
            scores = run.scores[("compiled", split)]
            mean, (lo, hi) = sum(scores) / len(scores), score_interval(scores)
            axes.errorbar(mean, i + offset, xerr=[[mean - lo], [hi - mean]], fmt="o", color=color, capsize=3,
                          label=f"{split} ({len(scores)})" if i == 0 else None)
        if finished and len({run.tags.get("student") for run in runs}) == 1:  # one student: one program as written
            base = finished[0].scores[("baseline", split)]
            axes.axvline(sum(base) / len(base), color=color, linestyle="--", linewidth=1)
    axes.set_yticks(range(len(finished)), [names[run.run_id] for run in finished])
    axes.set_xlabel("score (dashed: the program as written)")
    axes.set_title(f"{sweep_id}: score after compiling, 95% intervals")
    if finished:
        axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    return figure


def write_report(sweep_id: str, runs: Sequence[SweepRun], out: Path,
                 figure: Callable[[str, Sequence[SweepRun]], object] = sweep_figure) -> dict[str, Path]:
    """`sweep.md` and `sweep.png` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"table": out / "sweep.md", "figure": out / "sweep.png"}
    paths["table"].write_text(sweep_markdown(sweep_id, runs))
    figure(sweep_id, runs).savefig(paths["figure"], dpi=120)
    return paths


def main(argv: list[str] | None = None) -> dict:
    """scripts/sweep_table.py: one sweep's table and figure written to `--out` (and, with `--log`, attached to the
    sweep's last finished run under `sweep/`); returns the runs counted and the files written."""
    parser = argparse.ArgumentParser(description="One optimizer sweep's table from MLflow: each optimizer's val / "
                                                 "test score with 95% bootstrap intervals, its gain, its spend, and "
                                                 "every pair head to head.")
    parser.add_argument("sweep_id")
    parser.add_argument("--tracking-uri", help="MLflow store; default the jobs' store (factlab/tracking/store.py)")
    parser.add_argument("--out", help="folder for sweep.md and sweep.png; default outputs/sweeps/<sweep id>")
    parser.add_argument("--log", action="store_true", help="log the table and figure to the last finished run")
    args = parser.parse_args(argv)

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    from factlab.tracking.store import tracking_uri

    client = mlflow.MlflowClient(tracking_uri=tracking_uri(args.tracking_uri))
    runs = find_sweep(client, args.sweep_id)
    paths = write_report(args.sweep_id, runs, Path(args.out or f"outputs/sweeps/{args.sweep_id}"))
    print(paths["table"].read_text())
    print(f"figure: {paths['figure']}")
    finished = [run for run in runs if run.finished]
    if args.log and finished:
        for path in paths.values():
            client.log_artifact(finished[-1].run_id, str(path), "sweep")
    return {"runs": len(runs), "finished": len(finished), **{k: str(v) for k, v in paths.items()}}
