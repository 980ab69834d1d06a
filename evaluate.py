# python evaluate.py dataset=bundled
# python evaluate.py dataset=bundled programs.judge=<json path or MLflow run id> max_cases=3 tracking=off
"""Evaluate the whole checking pipeline on a dataset's split with per-stage gold: every stage's metrics, final labels,
paragraph risk coverage / false alarms, cost per stage, and every wrong label attributed to a stage (first failure
and counterfactual gold substitution), logged to MLflow (experiment `evaluate/<dataset>`).

Config: conf/evaluate.yaml; the work: factlab/evals/job.py; docs: docs/evaluate.md. Compare runs with
scripts/compare_runs.py; export attributed bad cases with scripts/reflow.py.
"""

import hydra
from omegaconf import DictConfig


def run(cfg: DictConfig) -> dict:
    """Evaluate per `cfg` (see factlab.evals.job.run)."""
    from factlab.evals.job import run as evaluate

    return evaluate(cfg)


@hydra.main(config_path="conf", config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> float:
    result = run(cfg)
    metrics, split = result["metrics"], cfg.split
    print(f"{len(result['cases'])} cases, {int(metrics[f'{split}/items'])} gold claims, "
          f"{int(metrics['attr/bad_items'])} wrong labels; label accuracy {metrics[f'{split}/label/accuracy']:.3f}, "
          f"risk coverage {metrics.get(f'{split}/e2e/risk_coverage', float('nan')):.3f}, "
          f"false alarms {metrics.get(f'{split}/e2e/false_alarm_rate', float('nan')):.3f}")
    print(result["attribution_table"])
    print(f"outputs: {result['output_dir']}  MLflow run: {result['mlflow_run_id']}")
    return metrics[f"{split}/label/accuracy"]  # the headline metric, for Hydra sweepers


if __name__ == "__main__":
    main()
