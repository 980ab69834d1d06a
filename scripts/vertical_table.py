# python scripts/vertical_table.py [compare_extract_vertical] [--optimizer gepa_rules] [--out outputs/sweeps/...]
"""One program per vertical vs one shared program, from one optimize.py sweep in MLflow: per vertical, its own
compiled program, the shared one and the program as written on that vertical's test examples, with 95% bootstrap
intervals and the paired differences; then all verticals pooled. Runs compiled with `vertical=<name>` are the own
programs, the run without a vertical the shared one (conf/experiment/compare_extract_vertical.yaml).
Code: factlab/optimize/vertical.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_id", nargs="?", default="compare_extract_vertical")
    parser.add_argument("--optimizer", help="only this optimizer's runs (default: the last finished run of each kind)")
    parser.add_argument("--tracking-uri", help="MLflow store; default the jobs' store (factlab/tracking/store.py)")
    parser.add_argument("--out", help="folder for vertical.md; default outputs/sweeps/<sweep id>")
    args = parser.parse_args(argv)

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    from factlab.optimize.sweep import find_sweep
    from factlab.optimize.vertical import vertical_markdown
    from factlab.tracking.store import tracking_uri

    client = mlflow.MlflowClient(tracking_uri=tracking_uri(args.tracking_uri))
    table = vertical_markdown(args.sweep_id, find_sweep(client, args.sweep_id), args.optimizer)
    out = Path(args.out or f"outputs/sweeps/{args.sweep_id}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "vertical.md").write_text(table)
    print(table)
    return table


if __name__ == "__main__":
    main()
