"""Run each Hydra multirun job as a Ray task: the job's config is composed here (Hydra's sweep config), the task
function runs in a Ray worker with Hydra's globals restored, and its JobReturn comes back to Hydra. Adapted from
hydra-ray-launcher's local mode (Copyright (c) Facebook, Inc. and its affiliates; MIT licence)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)


def _run_job(hydra_context: HydraContext, sweep_config: DictConfig, task_function: TaskFunction,
             singleton_state: dict[Any, Any]) -> JobReturn:
    setup_globals()
    Singleton.set_state(singleton_state)
    HydraConfig.instance().set_config(sweep_config)
    return run_job(hydra_context=hydra_context, task_function=task_function, config=sweep_config,
                   job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")


class RayLauncher(Launcher):
    def __init__(self, ray: DictConfig) -> None:
        self.ray_cfg = ray
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None
        self.config: DictConfig | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray

        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        log.info("Ray launcher: %d jobs, sweep dir %s", len(job_overrides), sweep_dir)
        if not ray.is_initialized():
            init = {k: v for k, v in OmegaConf.to_container(self.ray_cfg.init, resolve=True).items() if v is not None}
            ray.init(**init)
        remote = {k: v for k, v in OmegaConf.to_container(self.ray_cfg.remote, resolve=True).items() if v is not None}
        run_remote = ray.remote(**remote)(_run_job) if remote else ray.remote(_run_job)
        pending = []
        for offset, overrides in enumerate(job_overrides):
            idx = initial_job_idx + offset
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"job_id_for_{idx}"
                sweep_config.hydra.job.num = idx
            pending.append(run_remote.remote(hydra_context=self.hydra_context, sweep_config=sweep_config,
                                             task_function=self.task_function,
                                             singleton_state=Singleton.get_state()))
        return [ray.get(job) for job in pending]
