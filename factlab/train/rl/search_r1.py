"""`python train.py recipe=search_r1`: Search-R1 style RL of the search checker through VERL.

    python train.py recipe=search_r1                         # needs a CUDA GPU; refuses to launch without one
    python train.py recipe=search_r1 recipe.dry_run=true     # CPU: data, service and VERL config checked, no launch
    python train.py recipe=search_r1 recipe.overrides='[actor_rollout_ref.rollout.n=8]'

Steps: the job's splits -> VERL parquet (factlab/train/rl/data.py); the retrieval service on 127.0.0.1
(factlab/train/rl/retrieval.py); a tool config with the service's URL (conf/verl/tool_config/search_tool.yaml); then
`python -m verl.trainer.main_ppo --config-path conf/verl --config-name search_r1 ...` as a subprocess logging into the
job's MLflow run. The VERL config is composed and validated with verl's own `validate_config` before launching.
"""

from __future__ import annotations

import logging
import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.config import CONF_DIR
from factlab.train.job import TrainJob

logger = logging.getLogger(__name__)

VERL_CONF_DIR = CONF_DIR / "verl"
TOOL_CONFIG = VERL_CONF_DIR / "tool_config" / "search_tool.yaml"


class NoGPUError(RuntimeError):
    """VERL's rollout and FSDP training need CUDA GPUs that this machine does not have."""


def cuda_devices() -> int:
    """How many CUDA devices torch sees (0 on a CPU-only build or machine)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def require_gpus(needed: int) -> None:
    """Raise NoGPUError, saying what to run instead, unless `needed` CUDA devices are visible."""
    found = cuda_devices()
    if found < needed:
        raise NoGPUError(
            f"recipe search_r1 launches VERL (python -m verl.trainer.main_ppo), which needs {needed} CUDA GPU(s); "
            f"this machine has {found}. Nothing was launched. On CPU run `python train.py recipe=grpo_search_cpu` "
            "(same data, tool and reward through TRL), or `recipe.dry_run=true` to prepare and validate only; on a "
            "GPU machine see scripts/gpu_check_search_r1.sh.")


def write_tool_config(url: str, topk: int, out_path: Path) -> Path:
    """A copy of conf/verl/tool_config/search_tool.yaml with the service's URL and top-k filled in."""
    config = OmegaConf.load(TOOL_CONFIG)
    config.tools[0].config.retrieval_url = url
    config.tools[0].config.topk = topk
    out_path.parent.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(config, out_path)
    return out_path


def verl_overrides(manifest: Mapping, model_path: str | Path, tool_config: str | Path, gpus: int, total_steps: int,
                   checkpoint_dir: str | Path, extra: Sequence[str] = (), business: str = "default") -> list[str]:
    """The Hydra overrides that fill conf/verl/search_r1.yaml's ??? fields and hand the reward its business rules,
    then the user's `extra` ones.

    >>> verl_overrides({"files": {"train": "t.parquet"}}, "m", "tools.yaml", 1, 5, "ckpt")[:2]
    ['data.train_files=t.parquet', 'data.val_files=t.parquet']
    """
    files = manifest["files"]
    val = files.get("test") or files.get("val") or files["train"]
    return [f"data.train_files={files['train']}", f"data.val_files={val}",
            f"actor_rollout_ref.model.path={model_path}",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tool_config}",
            f"trainer.n_gpus_per_node={gpus}", f"trainer.total_training_steps={total_steps}",
            f"trainer.test_freq={total_steps}", f"trainer.default_local_dir={checkpoint_dir}",
            f"reward.custom_reward_function.reward_kwargs.business={business}", *extra]


def compose_verl_config(overrides: Sequence[str] = (), config_name: str = "search_r1") -> DictConfig:
    """Compose conf/verl/<config_name>.yaml on top of verl's ppo_trainer, as main_ppo will (unresolved).

    Works inside a running Hydra app (train.py): the app's Hydra state is set aside and restored.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    backup = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(VERL_CONF_DIR), version_base=None):
            return compose(config_name=config_name, overrides=list(overrides))
    finally:
        restore_gh_from_backup(backup)


def validate_verl_config(config: DictConfig) -> None:
    """Run verl's own checks on a composed config (what main_ppo runs first), plus the rollout dataclass checks."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    omega_conf_to_dataclass(config.actor_rollout_ref.rollout)


_METRIC = re.compile(r"(val-core/[^\s:]+/reward/mean@\d+):([-+0-9.eE]+|nan)")


def last_val_reward(log_text: str) -> float:
    """The last `val-core/<data_source>/reward/mean@k` VERL's console logger printed (nan when none).

    >>> last_val_reward("step:0 - val-core/factlab/bundled/reward/mean@1:0.25 - x:1\\nstep:5 - "
    ...                 "val-core/factlab/bundled/reward/mean@1:0.5")
    0.5
    """
    values = [float(value) for _, value in _METRIC.findall(log_text)]
    return values[-1] if values else math.nan


def search_r1(job: TrainJob, stage: DictConfig, name: str, headline: str, base_lm: DictConfig, retrieval: DictConfig,
              base_model: str | None, multi_hop_only: bool, max_rows: Mapping, topk: int, gpus: int,
              total_steps: int, verl_config: str, overrides: Sequence[str], dry_run: bool, business: str,
              row_sample: str = "seeded") -> dict:
    """Prepare data, serve retrieval, launch VERL's GRPO on the search checker; the test reward is the headline.

    Raises:
        NoGPUError: fewer than `gpus` CUDA devices (checked first, unless `dry_run`).
        subprocess.CalledProcessError: VERL exited non-zero (its log is `<work_dir>/verl.log`).
    """
    from factlab.train.rl.retrieval import RetrievalService
    from factlab.train.rl.setup import base_model_folder, job_retrievers, write_job_data

    if not dry_run:
        require_gpus(gpus)
    manifest = write_job_data(job, multi_hop_only, max_rows, row_sample)
    model_path = base_model_folder(base_model, base_lm)
    retrievers = job_retrievers(manifest, retrieval, job.work_dir)
    checkpoint_dir = (job.work_dir / "checkpoints").resolve()
    with RetrievalService(retrievers, default_k=topk) as service:
        tool_config = write_tool_config(service.url, topk, job.work_dir / "search_tool.yaml")
        args = verl_overrides(manifest, model_path, tool_config.resolve(), gpus, total_steps, checkpoint_dir,
                              list(overrides), business)
        validate_verl_config(compose_verl_config(args, verl_config))
        command = [sys.executable, "-m", "verl.trainer.main_ppo", f"--config-path={VERL_CONF_DIR}",
                   f"--config-name={verl_config}", *args]
        job.tracker.log_params({"verl/command": " ".join(command), "rl/corpus": manifest["corpus"],
                                **{f"rl/{split}_rows": n for split, n in manifest["rows"].items()}})
        if dry_run:
            print("dry run, not launched:\n  " + " \\\n    ".join(command))
            return {"recipe": name, "headline": math.nan, headline: math.nan, "model_uri": "", "dry_run": True}
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if job.tracker.run_id:  # VERL logs into this job's MLflow run (its mlflow logger honours MLFLOW_RUN_ID)
            env["MLFLOW_RUN_ID"] = job.tracker.run_id
        log_path = job.work_dir / "verl.log"
        with log_path.open("w", encoding="utf-8") as log:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            for line in process.stdout:
                sys.stdout.write(line)
                log.write(line)
            code = process.wait()
        if code != 0:
            raise subprocess.CalledProcessError(code, command, output=f"see {log_path}")
    reward = last_val_reward(log_path.read_text(encoding="utf-8"))
    job.tracker.log_metrics({headline: reward})
    return {"recipe": name, "headline": reward, headline: reward, "model_uri": str(checkpoint_dir)}
