"""A stage is one concept with backends, all in its conf/stage/<name>.yaml: `program` (the DSPy program on the LM,
optionally with compiled JSON state from optimize.py), `classifier` (a trained model answering with the same output
fields) and, where one exists, `rules` (a deterministic module, `factlab.stages.rules`). `backend=` picks one.

The node is its own builder: `_target_: factlab.stages.build.build_stage` (with `_recursive_: false`, so only the chosen
backend is instantiated), which returns a `Stage`: the built module with its name, backend and identity (what decides
its answers, for the claim cache and run records). Every consumer (verify, evaluate, optimize, the LM teacher, the CLI)
builds stages here, and every compiled-program reference is resolved here, by factlab.tracking.refs, so a ref means the
same program everywhere.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import dspy
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from factlab.stages.routed import ROUTED_FIELDS
from factlab.tracking.refs import resolve_compiled, resolve_model


class CompiledProgramError(RuntimeError):
    """A compiled program file is missing or does not fit the stage."""


def _program(stage_cfg: DictConfig):
    return instantiate(stage_cfg.program)


def _classifier(stage_cfg: DictConfig):
    if not stage_cfg.model:
        raise CompiledProgramError(
            f"stage {stage_cfg.name!r}: backend=classifier needs stage.{stage_cfg.name}.model=<path or MLflow URI>"
        )
    return instantiate(stage_cfg.classifier, model=stage_cfg.model)


def _rules(stage_cfg: DictConfig):
    return instantiate(stage_cfg.rules)


_BACKENDS = {"program": _program, "classifier": _classifier, "rules": _rules}


def stage_identity(stage_cfg: DictConfig, compiled: str | None = None, store: str | None = None) -> dict:
    """What decides a built stage's answers: its config, and the CONTENT of its compiled program and of its trained
    model (a program or model rewritten in place is another stage). For cache keys and run records."""
    identity = {"config": OmegaConf.to_container(stage_cfg, resolve=True), "compiled_sha256": None,
                "model_sha256": None}
    if compiled:
        identity["compiled_sha256"] = file_digest(resolve_compiled(compiled, stage_cfg.name, store))
    if stage_cfg.backend == "classifier" and stage_cfg.model:
        identity["model_sha256"] = folder_digest(resolve_model(stage_cfg.model, store))
    if stage_cfg.backend == "program" and stage_cfg.get("lora"):
        from factlab.models.lora import lora_source

        identity["lora_sha256"] = file_digest(lora_source(stage_cfg.lora))
    return identity


@functools.cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes (computed once per process per size and mtime)."""
    stat = Path(path).stat()
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def folder_digest(folder: str | Path) -> str:
    """sha256 over the relative names and contents of every file in a folder."""
    digest = hashlib.sha256()
    root = Path(folder)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(root)}\0{file_digest(path)}\n".encode())
    return digest.hexdigest()


def build_program(stage_cfg: DictConfig, compiled: str | None = None, store: str | None = None) -> dspy.Module:
    """Instantiate the stage per its `backend`, with the compiled program `compiled` names loaded into it.

    Args:
        stage_cfg: the stage's config node (conf/stage/<name>.yaml).
        compiled: a compiled-program reference (JSON file, optimize.py run dir, MLflow run id or runs:/ URI); None =
            the uncompiled program.
        store: the MLflow store run ids are looked up in; None = the store rule (factlab/tracking/store.py).

    Raises:
        CompiledProgramError: an unknown backend, a classifier backend without a model, or state that does not fit.
        CompiledRefError: a reference that names no program.
    """
    if stage_cfg.backend not in _BACKENDS:
        raise CompiledProgramError(
            f"stage {stage_cfg.name!r}: unknown backend {stage_cfg.backend!r}; expected one of {sorted(_BACKENDS)}"
        )
    if stage_cfg.backend != "program" and not OmegaConf.select(stage_cfg, stage_cfg.backend):
        raise CompiledProgramError(f"stage {stage_cfg.name!r} has no {stage_cfg.backend} backend")
    program = _BACKENDS[stage_cfg.backend](stage_cfg)
    if compiled:
        path = resolve_compiled(compiled, stage_cfg.name, store)
        try:
            program.load(str(path))
        except Exception as exc:  # DSPy raises several types for state that does not fit
            raise CompiledProgramError(f"{path} is not a compiled {stage_cfg.name!r} program: {exc}") from exc
    return program


class Stage:
    """A built stage: call it with the stage's input fields, it answers with its output fields (a dspy.Prediction).

    Attributes:
        name: the stage (conf/stage/<name>.yaml).
        backend: program | classifier | rules.
        module: the built module (the DSPy program, the classifier's module, the rule module).
        identity: what decides its answers (`stage_identity`).
        lora: a program backend's own LoRA adapter (`factlab:<name>`, a PEFT folder or a .gguf): the checker runs the
            stage on the student served with it (factlab.pipeline.meter.StageMeter); None = the student as it is.
    """

    def __init__(self, name: str, backend: str, module, identity: dict, lora: str | None = None) -> None:
        self.name, self.backend, self.module, self.identity = name, backend, module, identity
        self.lora = lora

    def __call__(self, **inputs):
        return self.module(**inputs)

    def __repr__(self) -> str:
        return f"Stage({self.name!r}, backend={self.backend!r})"


def build_stage(**node) -> Stage:
    """The `_target_` of every conf/stage/<name>.yaml (instantiated with `_recursive_: false`): the stage per its
    `backend`, with the compiled program `compiled` names loaded into a program backend.

    Keys of the node: name, backend, model, compiled (a compiled-program reference, or null), store (the MLflow store
    references are looked up in; null = the store rule), lora (a program backend's LoRA adapter on the student, or
    null; part of the identity, so cached answers of the base and the adapter never mix), and one node per backend
    (program, classifier, rules).
    """
    stage_cfg = OmegaConf.create({k: v for k, v in node.items() if k not in ("compiled", "store")})
    compiled, store = node.get("compiled"), node.get("store")
    program = stage_cfg.backend == "program"
    compiled = compiled if program else None
    lora = str(node["lora"]) if program and node.get("lora") else None
    return Stage(str(stage_cfg.name), str(stage_cfg.backend), build_program(stage_cfg, compiled, store),
                 stage_identity(stage_cfg, compiled, store), lora)


def per_vertical(stages, refs, store: str | None = None) -> dict[str, dict[str, Stage]]:
    """A compiled program per vertical (`by_vertical.<stage>: {vertical: ref}`, optimize.py vertical=<v>): stage ->
    vertical -> the stage built with that vertical's program. Stages with no mapping are left out.

    Args:
        stages: the `stage` config (stage name -> its node), as config or plain dicts.
        refs: stage -> {vertical: compiled-program reference}.
        store: the MLflow store references are looked up in.
    """
    refs = {str(stage): mapping for stage, mapping in (refs or {}).items() if mapping}
    for stage in refs:
        if stage not in ROUTED_FIELDS:
            raise ValueError(f"by_vertical.{stage}: only {', '.join(ROUTED_FIELDS)} can have a program per vertical")
    stages = OmegaConf.to_container(OmegaConf.create(stages), resolve=True)
    return {str(stage): {str(v): build_stage(**{**stages[stage], "compiled": ref, "store": store})
                         for v, ref in mapping.items()}
            for stage, mapping in refs.items()}
