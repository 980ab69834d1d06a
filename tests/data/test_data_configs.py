"""Dataset configs: each names its file and a loader, reads the data root from FACTLAB_DATA_ROOT, and loads.

Tests marked `data` read the public datasets (FACTLAB_DATA_ROOT, else <repo>/../shared/data) and skip when absent;
they load at most 200 rows per file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import get_method
from omegaconf import OmegaConf

from factlab.config import CONF_DIR, compose_config, config_names
from factlab.data.registry import load_dataset
from factlab.data.views import relation_pairs, rl_rows
from factlab.schema import LABELS, RELATIONS

DATA_ROOT_DEFAULT = "${oc.env:FACTLAB_DATA_ROOT,../shared/data}"
MIXES = {"judge_mix", "extract_bench"}  # mixes (tests/data/test_data_mix.py, test_data_vertical_claims.py)
OWN = {"bundled", "extra_zh", "vertical_claims"}  # our committed case files under datasets/ (repo-relative data_root)
# the layers' own gold (datasets/layers/; not claim cases): tested in tests/pipeline/test_logic_layer.py and
# tests/pipeline/test_paragraph_type.py
LAYER_GOLD = {"logic_gold", "paragraph_types"}
# the layers' public sentence sets: tests/data/test_causal_strength.py, tests/data/test_scope.py
LAYER_PUBLIC = {"causal_strength", "scope"}
PUBLIC = [name for name in config_names("dataset") if name not in OWN | LAYER_GOLD | LAYER_PUBLIC and name not in MIXES]
POINTER_ONLY = {"hover", "cfever"}  # evidence only as ids upstream: claims with gold, no evidence text
LOADER_MODULES = sorted(p.stem for p in (CONF_DIR.parent / "factlab/data/loaders").glob("*.py")
                        if p.stem not in ("__init__", "build"))


def test_every_config_names_itself_a_loader_and_a_data_root() -> None:
    used = set()
    for path in sorted((CONF_DIR / "dataset").glob("*.yaml")):
        raw = OmegaConf.load(path)
        assert raw.name == path.stem, f"{path}: name must be the file name (errors point at conf/dataset/<name>.yaml)"
        assert raw._target_.startswith("factlab.data.loaders."), path
        assert callable(get_method(raw._target_)), path
        used.add(raw._target_.split(".")[3])
        assert "max_rows" in raw and raw.max_rows is None, path
        if path.stem not in OWN | LAYER_GOLD:
            assert OmegaConf.to_container(raw)["data_root"] == DATA_ROOT_DEFAULT, path
    assert used == set(LOADER_MODULES), "every loader module serves a config, every config a loader module"


def test_the_requested_datasets_have_configs() -> None:
    assert {"bundled", "climate_fever", "scifact", "healthver", "covidfact", "fever_symmetric",
            "fever_symmetric_v01", "vitaminc", "wice", "feverous", "hover", "averitec", "ocnli",
            "cfever"} <= set(config_names("dataset"))


def test_data_root_reads_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("FACTLAB_DATA_ROOT", "/somewhere/data")
    assert compose_config("prepare_data", ["dataset=healthver"]).dataset.data_root == "/somewhere/data"
    monkeypatch.delenv("FACTLAB_DATA_ROOT")
    assert compose_config("prepare_data", ["dataset=healthver"]).dataset.data_root == "../shared/data"


@pytest.mark.data
@pytest.mark.parametrize("name", PUBLIC)
def test_public_dataset_loads(name: str, public_data_root: Path, monkeypatch) -> None:
    monkeypatch.setenv("FACTLAB_DATA_ROOT", str(public_data_root))
    cfg = compose_config("prepare_data", [f"dataset={name}", "dataset.max_rows=200"])
    dataset = load_dataset(cfg.dataset)
    files = [path for pattern in cfg.dataset.get("files") or ["*"] for path in public_data_root.glob(pattern)]
    assert dataset.name == name and 0 < len(dataset.cases) <= 200 * max(2, len(files))  # max_rows is per file
    claims = [claim for case in dataset.cases for claim in case["claims"]]
    assert all(claim["label"] in LABELS and claim["relation"] in RELATIONS for claim in claims)
    assert len(rl_rows(dataset.cases)) == len(claims)
    pairs = relation_pairs(dataset.cases)
    if name in POINTER_ONLY:
        assert pairs == [] and all(case["sources"] == [] for case in dataset.cases)
    else:
        assert pairs and all(row["evidence"] for row in pairs)


def test_bundled_dataset_validates_when_present() -> None:
    if not sorted((CONF_DIR.parent / "datasets/bundled").glob("cases_*.jsonl")):
        pytest.skip("no datasets/bundled/cases_*.jsonl yet")
    dataset = load_dataset(compose_config("prepare_data", ["dataset=bundled"]).dataset)  # validates every row
    assert dataset.cases and len({case["case_id"] for case in dataset.cases}) == len(dataset.cases)
