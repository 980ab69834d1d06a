# python scripts/reflow.py run=<MLflow run id of an evaluate.py run>
# python scripts/reflow.py run=<id> reflow.methods=[counterfactual] reflow.out_dir=datasets/reflow
"""Export the attributed bad cases of an evaluate.py run into the blamed stages' training data:
datasets/reflow/<stage>/<run id>.jsonl, case-schema rows with provenance, deduplicated against what is already there
and against every test split, so `python optimize.py ... +dataset.extra=reflow` (or train.py) can include them.

Arguments are Hydra overrides of conf/evaluate.yaml (`run=<id>` is `reflow.run=<id>`; the `reflow` and `tracking`
nodes are used). Code: factlab/evals/reflow.py (`main`); docs: docs/evaluate.md.
"""

from __future__ import annotations

from factlab.evals.reflow import main

if __name__ == "__main__":
    main()
