# python loop.py                       (rounds=2 on claims_bench: evaluate, optimize the most-blamed stage, ...)
# python loop.py rounds=1 evaluate.sample_cases=10 name=short
"""The workbench loop: evaluate the checker -> attribute every wrong label to a stage -> optimize the most-blamed
stage -> evaluate again with the compiled program -> optimize the next most-blamed -> ..., every step the real
evaluate.py / optimize.py job, resumable (rerun the same command), tracked in MLflow (experiment `loop/<name>`, plus
each step's own run). Config: conf/loop.yaml; the work: factlab/loop/job.py; docs: docs/loop.md.
"""

import hydra
from omegaconf import DictConfig


def run(cfg: DictConfig) -> dict:
    """Run or resume the loop (see factlab.loop.job.run)."""
    from factlab.loop.job import run as loop

    return loop(cfg)


@hydra.main(config_path="conf", config_name="loop", version_base="1.3")
def main(cfg: DictConfig) -> float:
    result = run(cfg)
    print(result["table"])
    print(f"loop dir: {result['loop_dir']}  MLflow run: {result['mlflow_run_id']}")
    rows = result["rows"]
    return rows[-1]["label_accuracy"] if rows else float("nan")  # the headline metric, for Hydra sweepers


if __name__ == "__main__":
    main()
