# python scripts/compare_runs.py <run id> <run id> [--log]
# python scripts/compare_runs.py "tags.dataset = 'bundled' and tags.split = 'test'" --out outputs/compare/bundled
"""Compare evaluate.py runs from MLflow: per-stage metrics and attribution shares side by side with deltas against
the first run, and a stacked bar chart of the error distributions (how the blame moved between stages).

Selectors are run ids (32 hex digits) or MLflow filter strings searched in every `evaluate/*` experiment (or the
`--experiment` ones); the first run is the baseline. `--log` attaches the table and the chart to the LAST run as
artifacts under `compare/<baseline run id>/`. The store is the one every job uses (factlab/tracking/store.py:
$FACTLAB_MLFLOW_URI, else sqlite:///mlruns/mlflow.db) unless `--tracking-uri` is given. Code:
factlab/evals/compare.py (`main`).
"""

from __future__ import annotations

from factlab.evals.compare import main

if __name__ == "__main__":
    main()
