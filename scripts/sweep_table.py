# python scripts/sweep_table.py compare_judge [--out outputs/sweeps/compare_judge] [--log]
"""One optimizer sweep's table from MLflow: each optimizer's val / test score with 95% bootstrap intervals, the
paired interval of its test gain over the program as written, its language breakdown, metric calls, LM tokens,
compile time and GEPA's proposal outcomes; then every pair of optimizers head to head (the paired interval of the
difference on the test examples both scored); plus a figure of the scores with their intervals.

The sweep id is the `sweep_id` tag optimize.py writes (`sweep_id:` in conf/experiment/compare_*.yaml, else the
Hydra multirun dir's name). `--log` attaches the table and the figure to the sweep's last finished run under
`sweep/`. Code: factlab/optimize/sweep.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_id")
    parser.add_argument("--tracking-uri", help="MLflow store; default the jobs' store (factlab/tracking/store.py)")
    parser.add_argument("--out", help="folder for sweep.md and sweep.png; default outputs/sweeps/<sweep id>")
    parser.add_argument("--log", action="store_true", help="log the table and figure to the last finished run")
    args = parser.parse_args(argv)

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    from factlab.optimize.sweep import find_sweep, write_report
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


if __name__ == "__main__":
    main()
