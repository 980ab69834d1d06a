# python scripts/compare_runs.py <run id> <run id> [--log]
# python scripts/compare_runs.py "tags.dataset = 'bundled' and tags.split = 'test'" --out outputs/compare/bundled
"""Compare evaluate.py runs from MLflow: per-stage metrics and attribution shares side by side with deltas against
the first run, and a stacked bar chart of the error distributions (how the blame moved between stages).

Selectors are run ids (32 hex digits) or MLflow filter strings searched in every `evaluate/*` experiment (or the
`--experiment` ones); the first run is the baseline. `--log` attaches the table and the chart to the LAST run as
artifacts under `compare/<baseline run id>/`. The store is the one every job uses (factlab/tracking/store.py:
$FACTLAB_MLFLOW_URI, else sqlite:///mlruns/mlflow.db) unless `--tracking-uri` is given. Code: factlab/evals/compare.py.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("selectors", nargs="+", help="run ids and / or MLflow filter strings")
    parser.add_argument("--experiment", action="append", help="experiment name to search (repeatable); "
                                                               "default every evaluate/* experiment")
    parser.add_argument("--tracking-uri", help="MLflow store; default the jobs' store (factlab/tracking/store.py)")
    parser.add_argument("--out", help="folder for comparison.md and distributions.png; default "
                                      "outputs/compare/<time>")
    parser.add_argument("--log", action="store_true", help="log the table and chart to the last run")
    args = parser.parse_args(argv)

    import mlflow

    from factlab.evals.compare import comparison_figure, comparison_table, find_runs
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


if __name__ == "__main__":
    main()
