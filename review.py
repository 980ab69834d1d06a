# python review.py run=<verify output dir or MLflow run id>                   # the app: prints its URL with a token
# python review.py run=<verify output dir or MLflow run id> action=feedback   # decisions -> rows, thresholds, metrics
"""Review a checked report: a person accepts, rejects or revises each claim card in a local web app; the decisions
(SQLite) flow back into training rows, business thresholds and the product metrics, logged to MLflow.

Config: conf/review.yaml; the work: factlab/review/job.py; docs: docs/review.md.
"""

import hydra
from omegaconf import DictConfig


def run(cfg: DictConfig) -> dict:
    """Serve the review app or export the feedback, per `cfg.action` (see factlab.review.job.run)."""
    from factlab.review.job import run as review

    return review(cfg)


@hydra.main(config_path="conf", config_name="review", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    result = run(cfg)
    if cfg.action == "feedback":
        metrics = result["metrics"]
        print(f"{metrics['decided']} decisions: adoption {metrics['adoption']}, risk coverage "
              f"{metrics['risk_coverage']}; rows {result['rows']}; thresholds {result['thresholds']['chosen']}")
        return metrics["adoption"]
    return None


if __name__ == "__main__":
    main()
