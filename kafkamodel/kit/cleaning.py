"""The kit's notebooks are stored without outputs, and stay so when a user runs and saves them.

``clean(nb)`` is the stored form (nbstripout's rules): no outputs, no
execution counts, no widget state, no per-cell UI state, and the notebook
metadata reduced to the kernel spec and the language info, both as the
Python kernel (ipykernel) reports them but without the Python version,
which differs from machine to machine. Stored so, a notebook opened in
JupyterLab is not even marked modified when its kernel starts. ``pre_save_hook``
applies it to every notebook named ``NN_*.ipynb`` (the kit's numbered
notebooks) that Jupyter saves; the repository's ``jupyter_server_config.py``
installs it, and ``make lab`` starts JupyterLab with that file. Other
notebooks (a user's scratch work) are saved as they are.

``python -m kafkamodel.kit.cleaning [--check] FILE...`` cleans notebooks in
place, or with ``--check`` names those that are not clean (exit 1).
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any, MutableMapping

KEPT_CELL_METADATA = ("tags",)  # papermill's `parameters` tag; everything else is UI state
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3"}  # ipykernel's, less its "version"
NUMBERED = re.compile(r"^\d\d_.+\.ipynb$")


def clean(nb: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Strip `nb` (a notebook dict or NotebookNode) in place to its stored form, and return it."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        meta = cell.get("metadata", {})
        for key in [k for k in meta if k not in KEPT_CELL_METADATA]:
            del meta[key]
    meta = nb.setdefault("metadata", {})
    for key in [k for k in meta if k not in ("kernelspec", "language_info")]:
        del meta[key]
    if (meta.get("kernelspec") or {}).get("name") == "python3":
        meta["kernelspec"] = copy.deepcopy(KERNELSPEC)
    if (meta.get("language_info") or {}).get("name") == "python":
        meta["language_info"] = copy.deepcopy(LANGUAGE_INFO)
    return nb


def is_kit_notebook(path: "str | Path") -> bool:
    return bool(NUMBERED.match(Path(path).name))


def pre_save_hook(model: MutableMapping[str, Any], path: str = "", **kwargs: Any) -> None:
    """Jupyter server's pre-save hook: a kit notebook is saved clean (outputs stay on screen, not on disk)."""
    if model.get("type") == "notebook" and model.get("content") and is_kit_notebook(path):
        clean(model["content"])


def _stored(path: Path) -> tuple[str, str]:
    """(the file's text, the text of its clean form as Jupyter writes it)."""
    import nbformat

    text = path.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    return text, nbformat.writes(clean(nb)) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [Path(a) for a in args if a != "--check"]
    if not paths:
        print("usage: python -m kafkamodel.kit.cleaning [--check] NOTEBOOK...", file=sys.stderr)
        return 2
    dirty = []
    for path in paths:
        text, stored = _stored(path)
        if text != stored:
            dirty.append(path)
            if not check:
                path.write_text(stored, encoding="utf-8")
    if check and dirty:
        print(f"not clean (outputs or UI state stored): {', '.join(map(str, dirty))}; "
              f"run python -m kafkamodel.kit.cleaning on them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
