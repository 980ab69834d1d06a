"""The launcher's config, registered under hydra/launcher (imported by Hydra's plugin scan)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore


@dataclass
class RayConf:
    # ray.init(**init): address None = a local Ray started by the launcher (or the one RAY_ADDRESS names)
    init: dict[str, Any] = field(default_factory=lambda: {"address": None, "num_cpus": None,
                                                          "include_dashboard": False})
    # ray.remote(**remote) for every job: num_cpus = how many cores one job holds, so jobs on a 2-core machine run
    # one at a time (the LM servers use every core); on a cluster, lower it or ask for GPUs
    remote: dict[str, Any] = field(default_factory=lambda: {"num_cpus": 2, "max_retries": 0})


@dataclass
class RayLocalLauncherConf:
    _target_: str = "hydra_plugins.factlab_ray_launcher.ray_launcher.RayLauncher"
    ray: RayConf = field(default_factory=RayConf)


ConfigStore.instance().store(group="hydra/launcher", name="ray_local", node=RayLocalLauncherConf,
                             provider="factlab_ray_launcher")
