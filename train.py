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
    """Resolve the config, prepare the job (data, splits, teacher, work folder), run the recipe in one tracked run.

    Returns:
        The recipe's result: test metrics, `model_uri`, and `headline` (the recipe's headline metric).
    """
    import time
    from pathlib import Path

    from hydra.core.hydra_config import HydraConfig
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from factlab.runtime import prepare_offline_env
    from factlab.train.job import prepare_job, run_recipe

    prepare_offline_env()
    params = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)  # fails early on any ???
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)
    tracker = instantiate(cfg.tracking)
    job, job_params = prepare_job(cfg, tracker)
    tags = {"recipe": cfg.recipe.name, "stage": cfg.recipe.stage.name, "dataset": cfg.dataset.name,
            "teacher": job.teacher.name}
    with tracker.run(f"train/{cfg.recipe.name}", run_name=f"{cfg.dataset.name}-{job.teacher.name}", tags=tags):
        tracker.log_params({**params, **job_params})
        if HydraConfig.initialized():
            tracker.log_artifact(Path(HydraConfig.get().runtime.output_dir) / ".hydra", ".hydra")
        start = time.perf_counter()
        result = run_recipe(cfg.recipe, job)
        tracker.log_metrics({"job/wall_s": time.perf_counter() - start})
        result["run_id"] = tracker.run_id
    return result


@hydra.main(config_path="conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> float:
    result = run(cfg)
    print(f"{result['recipe']}: {cfg.recipe.headline}={result['headline']:.4f}  model_uri={result['model_uri']}")
    return float(result["headline"])


if __name__ == "__main__":
    main()
