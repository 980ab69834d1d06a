"""The shape of the package, enforced: a module imports only from its own package or from a lower layer
(factlab/layers.py; docs/architecture.md explains the table), the stage programs stay pure, train's sub-packages stay
apart, and no module replaces a checker's stage. Imports are read from the source (any depth, also inside
functions and `importlib.import_module(f"factlab....")`), so a lazy import cannot hide an upward arrow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from factlab.layers import LAYER

PACKAGE = Path(__file__).resolve().parent.parent / "factlab"

# What a stage program may import: no I/O, no MLflow, no config or LM construction (STYLE.md).
PROGRAM_IMPORTS = {"schema", "matching", "metrics", "untrusted"}
PROGRAM_FORBIDDEN_MODULES = {"os", "io", "pathlib", "shutil", "sqlite3", "subprocess", "httpx", "requests", "mlflow",
                             "hydra", "omegaconf", "litellm", "openai", "torch", "transformers"}
PROGRAM_FORBIDDEN_CALLS = {"open", "LM", "configure", "configure_cache", "settings"}
TRAIN_SUBPACKAGES = ("distill", "sft", "rl")


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _imports(path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement and every `import_module("factlab...")` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names
                      if node.module == "factlab"]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                arg = arg.values[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((arg.value.rstrip("."), node.lineno))
    return found


def _package(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if parts[0] == "factlab" and len(parts) > 1 else None


def test_every_package_has_a_layer():
    packages = {p.name if p.is_dir() else p.stem for p in PACKAGE.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    missing = packages ^ set(LAYER)
    assert not missing, f"add new packages to factlab/layers.py (and docs/architecture.md): {missing}"


def test_no_module_imports_its_own_layer_or_above():
    violations = []
    for path in _modules():
        own = _package(_dotted(path))
        for module, line in _imports(path):
            target = _package(module)
            if target is None or target == own:
                continue
            if target not in LAYER:
                violations.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}: unknown package")
            elif LAYER[target] >= LAYER[own]:
                violations.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {own} (layer {LAYER[own]}) imports "
                                  f"{module} (layer {LAYER[target]})")
    assert not violations, "imports that run sideways or back up the layers:\n" + "\n".join(violations)


@pytest.mark.parametrize("path", sorted((PACKAGE / "programs").glob("*.py")), ids=lambda p: p.name)
def test_stage_programs_stay_pure(path):
    for module, line in _imports(path):
        target = _package(module)
        assert target is None or target in PROGRAM_IMPORTS | {"programs"}, (
            f"{path.name}:{line} imports {module}: programs may import only {sorted(PROGRAM_IMPORTS)}")
        assert module.split(".")[0] not in PROGRAM_FORBIDDEN_MODULES, (
            f"{path.name}:{line} imports {module}: no I/O, MLflow or model construction in a program file")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            assert name not in PROGRAM_FORBIDDEN_CALLS, f"{path.name}:{node.lineno} calls {name}(): not in a program"


def test_train_subpackages_do_not_import_each_other():
    for sub in TRAIN_SUBPACKAGES:
        for path in sorted((PACKAGE / "train" / sub).glob("*.py")):
            for module, line in _imports(path):
                parts = module.split(".")
                other = parts[2] if parts[:2] == ["factlab", "train"] and len(parts) > 2 else None
                assert other not in set(TRAIN_SUBPACKAGES) - {sub}, (
                    f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}: train/{sub} must not reach into "
                    f"train/{other}; move what both need to train/")


def test_no_module_replaces_a_checker_stage():
    """Evaluation reads the checker's trace; nothing outside the checkers assigns into a `.stages[...]` table."""
    for path in _modules():
        if path.parent.name == "checkers":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Subscript) and getattr(target.value, "attr", None) == "stages":
                    pytest.fail(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} replaces a checker's stage")
