"""Hydra launcher `hydra/launcher=ray_local`: each job of a multirun is a Ray task (factlab's port of the local mode
of the upstream hydra-ray-launcher plugin, which cannot be installed beside dspy: it pins cloudpickle<3, dspy needs
cloudpickle>=3.1.2; and its 1.4 line needs Hydra 1.4, whose config loader rejects VERL 0.9.1's configs).

Same config shape as upstream (`ray.init` for ray.init(...), `ray.remote` for ray.remote(...)), so moving to the
upstream plugin later is a change of launcher name. A cluster: `hydra.launcher.ray.init.address=ray://head:10001`.
"""

from hydra_plugins.factlab_ray_launcher import _config  # noqa: F401  (registers hydra/launcher=ray_local)
