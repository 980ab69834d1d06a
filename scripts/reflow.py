# python scripts/reflow.py run=<MLflow run id of an evaluate.py run>
# python scripts/reflow.py run=<id> reflow.methods=[counterfactual] reflow.out_dir=datasets/reflow
"""Export the attributed bad cases of an evaluate.py run into the blamed stages' training data:
datasets/reflow/<stage>/<run id>.jsonl, case-schema rows with provenance, deduplicated against what is already there
and against every test split, so `python optimize.py ... +dataset.extra=reflow` (or train.py) can include them.

Arguments are Hydra overrides of conf/evaluate.yaml (`run=<id>` is `reflow.run=<id>`; the `reflow` and `tracking`
nodes are used). Code: factlab/evals/reflow.py; docs: docs/evaluate.md.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str] | None = None) -> dict:
    from factlab.config import CONF_DIR, compose_config
    from factlab.evals.reflow import reflow_run

    args = list(sys.argv[1:] if argv is None else argv)
    overrides = [f"reflow.{a}" if a.startswith("run=") else a for a in args]
    if not any(a.startswith("reflow.run=") for a in overrides):
        raise SystemExit("usage: python scripts/reflow.py run=<MLflow run id of an evaluate.py run> [overrides]")
    cfg = compose_config("evaluate", overrides)
    result = reflow_run(cfg, CONF_DIR.parent / "prepared")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
