"""Notebooks are stored without outputs, and Jupyter (configured by the repository) saves them that way."""

from __future__ import annotations

import copy
import shutil

import nbformat
import pytest

from kafkamodel.paths import NOTEBOOKS, ROOT
from kafkamodel.kit.cleaning import clean, main

KIT = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def test_every_committed_notebook_is_stored_clean():
    from kafkamodel.kit.specfile import all_specs

    # each study's, the explorer, the campaigns' report
    assert {p.name for p in KIT} == {s.notebook for s in all_specs()} | {"00_explore.ipynb", "01_sweep_batch.ipynb", "70_campaign.ipynb"}
    assert main(["--check", *map(str, KIT)]) == 0
    for path in KIT:
        nb = nbformat.read(str(path), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.outputs == [] and c.execution_count is None for c in code), path.name
        assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1, path.name  # papermill's tag kept


def _as_run_in_jupyterlab(nb):
    """What a session adds: outputs, counts, widget state, the kernel's language_info, per-cell UI state."""
    nb = copy.deepcopy(nb)
    for i, cell in enumerate(nb.cells):
        cell.metadata["scrolled"] = True
        cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
        if cell.cell_type == "code":
            cell.execution_count = i
            cell.outputs = [nbformat.v4.new_output("display_data", data={
                "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
                "text/plain": "VBox(...)"})]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python",
                                    "codemirror_mode": {"name": "ipython", "version": 3}}
    return nb


def test_clean_undoes_a_session():
    original = nbformat.read(str(NOTEBOOKS / "00_explore.ipynb"), as_version=4)
    assert clean(_as_run_in_jupyterlab(original)) == original


def test_jupyter_saves_kit_notebooks_clean_and_leaves_other_notebooks_alone(tmp_path):
    """The repository's jupyter_server_config.py, loaded as `make lab` does, on Jupyter's own contents manager."""
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT)).load_config()
    manager = FileContentsManager(root_dir=str(tmp_path), config=config)
    committed = (NOTEBOOKS / "00_explore.ipynb").read_text()
    shutil.copy(NOTEBOOKS / "00_explore.ipynb", tmp_path / "00_explore.ipynb")
    ran = _as_run_in_jupyterlab(nbformat.reads(committed, as_version=4))
    for name in ("00_explore.ipynb", "scratch.ipynb"):
        manager.save({"type": "notebook", "format": "json", "content": copy.deepcopy(ran)}, name)
    assert (tmp_path / "00_explore.ipynb").read_text() == committed  # byte for byte: git sees no change
    scratch = nbformat.read(str(tmp_path / "scratch.ipynb"), as_version=4)
    assert scratch.cells[2].outputs and "widgets" in scratch.metadata  # a user's own notebook keeps its outputs


def test_check_names_a_notebook_with_outputs(tmp_path, capsys):
    dirty = tmp_path / "10_x.ipynb"
    nbformat.write(_as_run_in_jupyterlab(nbformat.read(str(KIT[0]), as_version=4)), str(dirty))
    assert main(["--check", str(dirty)]) == 1
    assert f"not clean (outputs or UI state stored): {dirty}" in capsys.readouterr().err
    assert main([str(dirty)]) == 0 and main(["--check", str(dirty)]) == 0  # cleaned in place
    assert dirty.read_text() == KIT[0].read_text()


@pytest.mark.parametrize("args", [[], ["--check"]])
def test_cleaning_without_files_is_a_usage_error(args):
    assert main(args) == 2
