"""`programs.<stage>=<json path | run dir | MLflow run id>` resolves to a JSON state that build_program loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from optimize_fakes import fake_config

from factlab.config import compose_config
from factlab.optimize.job import run
from factlab.stages.build import build_program
from factlab.tracking.refs import CompiledRefError, resolve_compiled


@pytest.fixture(scope="module")
def compiled_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resolve")
    out = run(fake_config(tmp, ["optimizer=labeled_fewshot"], tracking=True))
    return tmp, out


def _loads(path: Path) -> int:
    program = build_program(compose_config("optimize", ["stage=checkworthy"]).stage, compiled=str(path))
    return len(program.classify.demos)


def test_a_path_passes_through(compiled_run):
    _, out = compiled_run
    assert resolve_compiled(out["program_path"], "checkworthy") == Path(out["program_path"])
    assert resolve_compiled(out["run_dir"], "checkworthy") == Path(out["program_path"])


def test_a_run_id_downloads_the_program_artifact(compiled_run, tmp_path):
    tmp, out = compiled_run
    uri = f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}"
    path = resolve_compiled(out["mlflow_run_id"], "checkworthy", store=uri, download_dir=tmp_path)
    assert path.is_file() and path.is_relative_to(tmp_path)
    assert path.read_text() == Path(out["program_path"]).read_text()
    assert _loads(path) == 4
    runs_uri = f"runs:/{out['mlflow_run_id']}/program/checkworthy.json"
    assert resolve_compiled(runs_uri, "checkworthy", store=uri, download_dir=tmp_path / "b").is_file()


def test_a_run_of_another_stage_is_refused(compiled_run):
    tmp, out = compiled_run
    with pytest.raises(CompiledRefError, match="compiled stage 'checkworthy', not 'judge'"):
        resolve_compiled(out["mlflow_run_id"], "judge", store=f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}")


@pytest.mark.parametrize("ref", ["no/such/file.json", "not-a-run-id"])
def test_unknown_refs_name_the_accepted_forms(ref):
    with pytest.raises(CompiledRefError, match="MLflow run id"):
        resolve_compiled(ref, "judge")


def test_an_unknown_run_id_names_the_store(tmp_path):
    with pytest.raises(CompiledRefError, match="no such MLflow run"):
        resolve_compiled("0" * 32, "judge", store=f"sqlite:///{tmp_path / 'm.db'}")
