"""python train.py recipe=distill_judge [dataset=bundled] [teacher=gold|lm] [tracking=off]

Distil one stage into a small model (conf/train.yaml; recipes in conf/recipe/ -> factlab/train/recipes.py), measure
it on the held-out test split, log it to MLflow (experiment train/<recipe>) and register it. Examples:

    python train.py recipe=distill_judge recipe.peft.enabled=true recipe.max_steps=200
    python train.py recipe=distill_checkworthy teacher=lm lm@teacher.lm=local_qwen05
    python train.py recipe=sft_query_rewrite tracking=off
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig


def run(cfg: DictConfig) -> dict:
    """Train per `cfg` (see factlab.train.job.run)."""
    from factlab.train.job import run as train

    return train(cfg)


@hydra.main(config_path="conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> float:
    result = run(cfg)
    print(f"{result['recipe']}: {cfg.recipe.headline}={result['headline']:.4f}  model_uri={result['model_uri']}")
    return float(result["headline"])


if __name__ == "__main__":
    main()
