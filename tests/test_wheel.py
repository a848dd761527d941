"""The package as a user installs it: a wheel built from this checkout, installed into a fresh virtual environment,
run from an empty folder far from the repository.

Installing the dependencies (Spark, Jupyter) into the fresh environment would take minutes, so it sees the ones
the running interpreter already has through a .pth file, added after the wheel is installed (with --no-deps): the
wheel's kafkamodel comes first on its path, and the test checks that it is the one imported. Nothing may be
written under the environment's site-packages; outputs go to the folder the commands run in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# what a build reads: the package, data/'s inputs, notebooks and the build files (not outputs, caches or a venv)
SOURCES = ("kafkamodel", "data/scenarios", "data/studies", "data/campaigns", "data/validation", "data/durability",
           "notebooks",
           "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


def dependency_paths() -> list[str]:
    """The running interpreter's site-packages folders (where pandas, pyspark, papermill are)."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, venv python, its site-packages, environment for commands)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy: the build's own build/ and egg-info stay out of the checkout
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KAFKAMODEL_HOME")}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(root / "dist"),
                    str(source)], check=True, env=env, cwd=root, capture_output=True, timeout=300)
    (wheel,) = (root / "dist").glob("kafkamodel-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, env=env, capture_output=True, timeout=300)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz_kafkamodel_test_dependencies.pth").write_text("\n".join(dependency_paths()) + "\n")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the interpreter's caches are not the kit's writing
    # the dependencies' data files (nbconvert's templates) as their own install would have put them
    shares = [str(Path(p).parents[2] / "share" / "jupyter") for p in dependency_paths()]
    env["JUPYTER_PATH"] = os.pathsep.join(s for s in shares if Path(s).is_dir())
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return wheel, python, site, env


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def command(installed, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    _, python, _, env = installed
    return subprocess.run([str(python.parent / "kafkamodel"), *args], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_wheel_holds_every_package_and_what_the_commands_read(installed):
    wheel = installed[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(p.parent.relative_to(REPO)) for p in (REPO / "kafkamodel").rglob("__init__.py")}
    assert packages <= {n.rpartition("/")[0] for n in names}  # every package, campaign included
    assert "kafkamodel/kit/templates/report.html.j2" in names
    for pattern in ("data/scenarios/*.yaml", "data/studies/*.yaml", "data/campaigns/*.yaml",
                    "data/campaigns/*/*.yaml", "data/validation/*.yaml", "data/durability/*.yaml",
                    "notebooks/*.ipynb"):
        shipped = sorted(REPO.glob(pattern))
        assert shipped and all(f"kafkamodel/shipped/{p.relative_to(REPO)}" in names for p in shipped), pattern
    assert not any("/runs/" in n or "/processed/" in n for n in names)
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "kafkamodel = kafkamodel.cli:main" in entry_points


def test_installed_commands_work_from_an_empty_folder_and_write_only_there(installed, tmp_path):
    _, python, site, env = installed
    where = subprocess.run([str(python), "-c", "import kafkamodel; print(kafkamodel.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(site)  # the wheel's copy, not the checkout's
    before = listing(site)
    version = command(installed, tmp_path, "--version")
    assert (version.returncode, version.stdout) == (0, f"kafkamodel {__import__('kafkamodel').__version__}\n")
    bare = command(installed, tmp_path)
    assert bare.returncode == 2 and "  campaign " in bare.stderr
    run = command(installed, tmp_path, "run", "steady-state", "--out", "out")
    assert run.returncode == 0, run.stderr
    assert "run folder: out/" in run.stdout and "records acknowledged" in run.stdout
    # the installed package runs the same shipped scenario as the checkout: the same numbers
    from kafkamodel import load_scenario, simulate
    from kafkamodel.paths import SCENARIOS

    mine = simulate(load_scenario(SCENARIOS / "steady-state.yaml")).summary
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written == json.loads(json.dumps(mine))
    as_module = subprocess.run([str(python), "-m", "kafkamodel", "run", "steady-state", "--json"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, check=False)
    assert as_module.returncode == 0 and json.loads(as_module.stdout) == written
    helped = command(installed, tmp_path, "campaign", "--help")
    assert helped.returncode == 0 and "--schedules" in helped.stdout
    missing = command(installed, tmp_path, "run", "no-such-scenario")
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert listing(site) == before


@pytest.mark.slow
@pytest.mark.spark  # the study's sweep, aggregation and report run on Spark
def test_installed_sweep_and_study_write_into_the_current_folder(installed, tmp_path):
    """A one-point sweep (papermill, the shipped point notebook) and one shipped study at a small scale (Spark:
    sweep, aggregation, report), all from an empty folder."""
    site = installed[2]
    before = listing(site)
    (tmp_path / "tiny.yaml").write_text(textwrap.dedent("""
        study: tiny
        notebook: 00_explore.ipynb
        base: steady-state
        seeds: 1
        overrides: {duration.ms: 500}
        params: {acks: "producers[*].acks"}
        grid: {acks: [1]}
    """))
    sweep = command(installed, tmp_path, "sweep", "tiny.yaml", "--workers", "1")
    assert sweep.returncode == 0 and "tiny: 1 points: 1 ran" in sweep.stdout, sweep.stderr
    (run,) = (tmp_path / "data" / "runs" / "tiny").glob("main-*")
    assert json.loads((run / "summary.json").read_text())["records_acked"] > 0
    study = command(installed, tmp_path, "study", "recovery_protocols", "--scale", "0.01", "--engine", "spark",
                    "--master", "local[2]", timeout=900)
    assert study.returncode == 0, study.stderr[-2000:]
    meta = json.loads((tmp_path / "data" / "processed" / "recovery_protocols" / "meta.json").read_text())
    runs = [d for d in (tmp_path / "data" / "runs" / "recovery_protocols").iterdir() if not d.name.startswith(".")]
    assert meta["runs"] == len(runs) > 0
    assert (tmp_path / "reports" / "recovery_protocols.html").is_file()
    assert (tmp_path / "reports" / "index.html").is_file()
    assert listing(site) == before
