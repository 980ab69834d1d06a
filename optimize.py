# python optimize.py stage=query_rewrite optimizer=gepa
# python optimize.py -m stage=judge optimizer=gepa,miprov2,bootstrap        (one MLflow run each, one sweep id)
"""Compile one stage's DSPy program with GEPA, MIPROv2, bootstrap few-shot, labeled few-shot or nothing.

Baseline on val/test, compile on train (val for selection; test never reaches the optimizer), compiled on val/test,
JSON state, everything logged to MLflow (sqlite:///mlruns/mlflow.db; `mlflow ui --backend-store-uri
sqlite:///mlruns/mlflow.db`). Rerunning the same command resumes the run. Config: conf/optimize.yaml; the work:
factlab/optimize/job.py; docs: docs/optimize.md.
"""

import hydra
from omegaconf import DictConfig


def run(cfg: DictConfig) -> dict:
    """Optimise `cfg.stage` with `cfg.optimizer` (see factlab.optimize.job.run)."""
    from factlab.optimize.job import run as optimize

    return optimize(cfg)


@hydra.main(config_path="conf", config_name="optimize", version_base="1.3")
def main(cfg: DictConfig) -> float:
    summary = run(cfg)
    print(f"{summary['stage']} / {summary['optimizer']}: val {summary['val/score_before']:.3f} -> "
          f"{summary['val/score_after']:.3f}, test {summary['test/score_before']:.3f} -> "
          f"{summary['test/score_after']:.3f}, {summary['optimizer/metric_calls']} metric calls, "
          f"{summary['time/wall_s']:.0f} s; program {summary['program_path']}; MLflow run {summary['mlflow_run_id']}")
    return summary["val/score_after"]  # the headline metric, for Hydra sweepers


if __name__ == "__main__":
    main()
