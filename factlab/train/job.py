"""The train job: resolve the config, prepare what every recipe gets (the split cases, the teacher, the tracker and its
own work folder) and run the recipe in one tracked run. `run(cfg)` is what train.py calls; tests call it directly.

The work folder is `<output_root>/<recipe>/<digest>` where the digest covers everything that decides the trained
weights (recipe, teacher, dataset content, splits, seed), so rerunning the same config after an interruption finds
its checkpoints and resumes, and a changed config never resumes someone else's run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from dataclasses import MISSING, dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.tracking.trackers import NullTracker

logger = logging.getLogger(__name__)


class RecipeConfigError(ValueError):
    """A recipe yaml with unknown or missing fields, or data that gives a recipe nothing to train on."""


def settings_from_yaml(cls, recipe: str, values: dict):
    """Dataclass `cls` from a recipe's keyword values, naming conf/recipe/<recipe>.yaml on an unknown or missing field.

    Raises:
        RecipeConfigError: listing the unknown and missing fields and the expected ones.
    """
    fields = cls.__dataclass_fields__
    unknown = sorted(set(values) - set(fields))
    missing = sorted(k for k, f in fields.items()
                     if k not in values and f.default is MISSING and f.default_factory is MISSING)
    if unknown or missing:
        raise RecipeConfigError(f"conf/recipe/{recipe}.yaml: unknown fields {unknown}, missing fields {missing}; "
                                f"expected {', '.join(sorted(fields))}")
    values = {k: OmegaConf.to_container(v, resolve=True) if isinstance(v, DictConfig) else v for k, v in values.items()}
    return cls(**values)


@dataclass(kw_only=True)
class FineTuneSettings:
    """What every fine-tuning recipe sets (conf/recipe/base/*.yaml documents each); a recipe's settings add theirs."""

    max_length: int
    peft: dict
    epochs: float
    max_steps: int
    batch_size: int
    learning_rate: float
    warmup_ratio: float
    eval_every: int
    early_stopping_patience: int
    bf16: bool | str  # true | false | auto (on only where the CPU computes bf16 natively); resolved on creation
    max_rows: dict = field(default_factory=dict)
    max_train_seconds: float | None = None
    min_steps: int = 0  # raise the epochs of a small train split to at least this many optimizer steps; 0 = off
    bf16_reason: str = ""  # why bf16 is on or off (logged with the run)

    def __post_init__(self) -> None:
        from factlab.runtime import resolve_bf16

        self.bf16, self.bf16_reason = resolve_bf16(self.bf16)


def announce_precision(job, settings: FineTuneSettings) -> None:
    """Say which precision the run trains in and why (a log line and the run's `bf16` / `bf16_reason` tags)."""
    import logging

    logging.getLogger(__name__).info("training in %s: %s", "bf16" if settings.bf16 else "fp32", settings.bf16_reason)
    job.tracker.set_tags({"bf16": str(settings.bf16), "bf16_reason": settings.bf16_reason})


@dataclass
class TrainJob:
    """The inputs of a recipe besides its own settings.

    Attributes:
        splits: split name -> cases (train / val / test).
        teacher: a GoldTeacher or LMTeacher (conf/teacher/*).
        tracker: an MLflowTracker or NullTracker, inside its run.
        work_dir: checkpoints, the final model and the evaluation files go here.
        seed: the seed of sampling, initialisation and data order.
        resume: continue from the last checkpoint in work_dir.
        registered_name: the MLflow registry name of the trained model.
        dataset: the dataset name(s), for tags and the model card.
    """

    splits: dict[str, list[dict]]
    teacher: object
    tracker: object = field(default_factory=NullTracker)
    work_dir: Path = Path("outputs/train/work")
    seed: int = 0
    resume: bool = True
    registered_name: str = "factlab-model"
    dataset: str = ""


def config_digest(cfg: DictConfig, dataset_hash: str) -> str:
    """12 hex digits over the config that decides the trained weights (not tracking, output paths or resume)."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    keep = {key: resolved[key] for key in ("recipe", "teacher", "splits", "seed")}
    # what only decides when an invocation stops (a recipe's `undigested` keys) does not make a new work folder
    keep["recipe"] = {k: v for k, v in keep["recipe"].items() if k not in set(keep["recipe"].get("undigested") or [])}
    if isinstance(keep["recipe"].get("stage"), dict):  # the adapter a stage is served with is not what trains it
        keep["recipe"]["stage"] = {k: v for k, v in keep["recipe"]["stage"].items() if k != "lora"}
    keep["dataset"] = dataset_hash
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:12]


def prepare_job(cfg: DictConfig, tracker) -> tuple[TrainJob, dict]:
    """Load and split the dataset, build the teacher, pick the work folder.

    Returns:
        The job and params to log (dataset content hash, work folder, split sizes).
    """
    from hydra.utils import instantiate

    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases  # the one case splitter: evaluate.py and optimize.py use it too

    dataset = load_dataset(cfg.dataset)
    splits = split_cases(dataset.cases, cfg.splits, cfg.seed)
    teacher = instantiate(cfg.teacher, _recursive_=False)  # the LM config stays a config until it is needed
    work_dir = Path(cfg.output_root) / cfg.recipe.name / config_digest(cfg, dataset.content_hash)
    job = TrainJob(splits=splits, teacher=teacher, tracker=tracker, work_dir=work_dir, seed=cfg.seed,
                   resume=cfg.resume, registered_name=cfg.registered_name, dataset=dataset.name)
    params = {"dataset/content_hash": dataset.content_hash, "work_dir": str(work_dir.resolve()),
              **{f"data/{name}_cases": len(cases) for name, cases in splits.items()}}
    return job, params


def run_recipe(recipe: DictConfig, job: TrainJob) -> dict:
    """Call the recipe's `_target_` with its settings and the job.

    The job goes in apart from the settings: as a kwarg of `hydra.utils.call` it would be merged into the config,
    copying every case into OmegaConf (a minute for the bundled data alone).
    """
    from hydra.utils import call

    return call(recipe, _partial_=True, _recursive_=False)(job=job)


def run(cfg: DictConfig) -> dict:
    """Resolve the config, prepare the job (data, splits, teacher, work folder), run the recipe in one tracked run.

    Returns:
        The recipe's result: test metrics, `model_uri`, `headline` (the recipe's headline metric) and `run_id`.
    """
    import time

    from hydra.utils import instantiate

    from factlab.runtime import prepare_offline_env
    from factlab.tracking.run import resolved_config, tracked_run

    prepare_offline_env()
    resolved_config(cfg)  # fails early on any ??? before data or models load
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)
    tracker = instantiate(cfg.tracking)
    job, job_params = prepare_job(cfg, tracker)
    tags = {"recipe": cfg.recipe.name, "stage": cfg.recipe.stage.name, "dataset": cfg.dataset.name,
            "teacher": job.teacher.name}
    with work_lock(job.work_dir), tracked_run(cfg, f"train/{cfg.recipe.name}",
                                               run_name=f"{cfg.dataset.name}-{job.teacher.name}", tags=tags,
                                               params=job_params, tracker=tracker):
        start = time.perf_counter()
        result = run_recipe(cfg.recipe, job)
        tracker.log_metrics({"job/wall_s": time.perf_counter() - start})
        result["run_id"] = tracker.run_id
    return result


@contextlib.contextmanager
def work_lock(work_dir: Path):
    """Hold `<work_dir>.lock` while a run trains in `work_dir`: the same command started twice (a second shell, the
    loop's train step while a long run of the same config is still going) waits for the first instead of writing
    checkpoints into the same folder; then it resumes from them, or finds the fit finished."""
    from filelock import FileLock, Timeout

    work_dir.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(work_dir) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.warning("another train.py is running in %s: waiting for it to finish, then resuming from its "
                       "checkpoints", work_dir)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()
