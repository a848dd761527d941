"""The command line never deletes what the kit did not write, refuses an unusable output folder in one line before
any work, and speaks to people (a table with units, --json, --version, the verbs when none is given).
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from kafkamodel import __version__
from kafkamodel.cli import main
from kafkamodel.folders import MARKER, FolderError, staged, swap_in, write_atomic
from kafkamodel.paths import STUDIES
from kafkamodel.sim.command import RUN_TABLE
from kafkamodel.sim.results.measures import SUMMARY


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(code: int, err: str, start: str) -> str:
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith(f"error: {start}"), lines[0]
    return lines[0]


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones included) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- run --out --------------------------------------------------------------------------------------------------


def test_run_out_on_a_users_folder_refuses_and_leaves_it_as_it_was(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "important.txt").write_text("keep\n")
    code, stdout, err = run_main(capsys, "run", "steady-state", "--out", str(out))
    line = one_line(code, err, "--out: ")
    assert str(out) in line and MARKER in line and stdout == ""
    assert listing(tmp_path) == {"out/important.txt": b"keep\n"}  # nothing beside it either


def test_run_out_replaces_the_kits_own_run_folder(capsys, tmp_path):
    out = tmp_path / "run"
    assert main(["run", "key-ordering", "--out", str(out)]) == 0
    assert (out / MARKER).is_file() and json.loads((out / "summary.json").read_text())["scenario"] == "key-ordering"
    capsys.readouterr()
    assert main(["run", "steady-state", "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads((out / "summary.json").read_text()) == printed  # the new run, whole
    assert printed["scenario"] == "steady-state"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no hidden leftovers


def test_run_out_dot_is_refused_in_a_users_folder_and_in_a_run_folder(capsys, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    one_line(*run_main(capsys, "run", "steady-state", "--out", ".")[::2], "--out: ")
    assert listing(tmp_path) == {"notes.txt": b"mine\n"}
    run = tmp_path / "run"
    assert main(["run", "key-ordering", "--out", str(run)]) == 0
    before = listing(run)
    monkeypatch.chdir(run)  # the kit's own folder, but the one the user is in: replacing it would pull it away
    line = one_line(*run_main(capsys, "run", "key-ordering", "--out", ".")[::2], "--out: ")
    assert "current folder" in line and listing(run) == before


def test_a_folder_from_before_markers_is_replaced_only_if_it_holds_nothing_else(tmp_path):
    def publish(final: Path) -> None:
        tmp = tmp_path / ".staging"
        tmp.mkdir()
        (tmp / "summary.json").write_text("{}\n")
        (tmp / "records.parquet").write_text("new\n")
        swap_in(tmp, final)

    old = tmp_path / "old"
    old.mkdir()
    (old / "summary.json").write_text("old\n")  # a run folder written before the marker existed
    publish(old)
    assert (old / "summary.json").read_text() == "{}\n" and (old / MARKER).is_file()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "summary.json").write_text("old\n")
    (mixed / "thesis.tex").write_text("mine\n")
    with pytest.raises(FolderError, match="holds files kafkamodel did not write"):
        publish(mixed)
    assert listing(mixed) == {"summary.json": b"old\n", "thesis.tex": b"mine\n"}


def test_staged_folders_and_files_replace_only_the_kits(tmp_path):
    final = tmp_path / "agg"
    final.mkdir()
    (final / "mine.csv").write_text("1\n")
    with pytest.raises(FolderError), staged(final) as tmp:
        (tmp / "meta.json").write_text("{}\n")
    assert listing(tmp_path) == {"agg/mine.csv": b"1\n"}  # and the staging copy is gone
    report = tmp_path / "reports" / "index.html"
    report.parent.mkdir()
    report.write_text("<p>my own page</p>\n")
    with pytest.raises(FolderError, match="did not write"):
        write_atomic(report, "<p>the kit's</p>\n")
    assert report.read_text() == "<p>my own page</p>\n"
    page = tmp_path / "reports" / "study.html"
    write_atomic(page, "<p>pending</p>\n")  # the kit's (listed in the folder's marker), even without its name
    write_atomic(page, "<p>done</p>\n")
    assert page.read_text() == "<p>done</p>\n"


# ---- --runs: a user's files survive; an unusable folder is one line -----------------------------------------------

TINY_SWEEP = """
    study: tiny_safety
    notebook: 00_explore.ipynb
    base: steady-state
    seeds: 1
    overrides: {{duration.ms: 500}}
    params: {{acks: "producers[*].acks"}}
    grid: {{acks: [1]}}
"""


@pytest.fixture
def runs_with_a_users_files(tmp_path):
    runs = tmp_path / "runs"
    (runs / "tiny_safety").mkdir(parents=True)
    (runs / "important.txt").write_text("keep\n")
    (runs / "tiny_safety" / ".my-notes").write_text("keep too\n")  # hidden, where a sweep cleans its leftovers
    return runs


def test_sweep_into_a_folder_holding_a_users_files_keeps_them(capsys, tmp_path, runs_with_a_users_files):
    runs = runs_with_a_users_files
    spec = tmp_path / "tiny_safety.yaml"
    spec.write_text(textwrap.dedent(TINY_SWEEP.format()))
    for extra in ([], ["--no-resume"]):  # the second replaces its own run folder
        assert main(["sweep", str(spec), "--runs", str(runs), "--workers", "1", "--timeout", "120", *extra]) == 0
    assert "1 points: 1 ran" in capsys.readouterr().out
    assert (runs / "important.txt").read_text() == "keep\n"
    assert (runs / "tiny_safety" / ".my-notes").read_text() == "keep too\n"
    (run,) = [d for d in (runs / "tiny_safety").iterdir() if (d / "summary.json").is_file()]
    assert (run / MARKER).is_file()


def test_a_campaign_into_a_folder_holding_a_users_files_keeps_them(capsys, tmp_path, runs_with_a_users_files,
                                                                    monkeypatch):
    import yaml

    from kafkamodel.campaign import command as campaign_run
    from kafkamodel.paths import CAMPAIGNS

    monkeypatch.setattr(campaign_run, "PROCESSED", tmp_path / "processed")  # not the repository's

    runs = runs_with_a_users_files
    (runs / "campaigns").mkdir()
    (runs / "campaigns" / "mine.txt").write_text("keep\n")
    data = yaml.safe_load((CAMPAIGNS / "safety.yaml").read_text())
    data.update(campaign="tiny_safety", schedules=1, settings={"isr_safe": data["settings"]["isr_safe"]})
    spec = tmp_path / "tiny_safety.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    code = main(["campaign", str(spec), "--runs", str(runs), "--workers", "1", "--no-report"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 schedules x 1 settings = 1 runs: 1 ran" in out
    assert (runs / "important.txt").read_text() == "keep\n"
    assert (runs / "campaigns" / "mine.txt").read_text() == "keep\n"
    assert (runs / "tiny_safety" / ".my-notes").read_text() == "keep too\n"


@pytest.mark.parametrize("verb", ["sweep", "campaign", "study"])
@pytest.mark.parametrize("where", ["a-file", "under-a-file", "unwritable"])
def test_an_unusable_runs_folder_is_one_line_before_anything_starts(capsys, tmp_path, verb, where):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    runs = {"a-file": a_file, "under-a-file": a_file / "runs", "unwritable": Path("/proc/kafkamodel-runs")}[where]
    args = {"sweep": ["sweep", "acks_durability"], "campaign": ["campaign", "safety"], "study": ["study"]}[verb]
    code, out, err = run_main(capsys, *args, "--runs", str(runs))
    line = one_line(code, err, "--runs: ")
    assert str(runs) in line and out == ""
    assert listing(tmp_path) == {"a-file": b"not a folder\n"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_runs_folder_is_one_line(capsys, tmp_path):
    runs = tmp_path / "ro"
    runs.mkdir()
    runs.chmod(0o555)
    try:
        line = one_line(*run_main(capsys, "sweep", "acks_durability", "--runs", str(runs))[::2], "--runs: ")
        assert "Permission denied" in line and not any(runs.iterdir())
    finally:
        runs.chmod(0o755)


# ---- a command line for people --------------------------------------------------------------------------------------


def test_version_and_bare_invocation(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"kafkamodel {__version__}\n"
    code, out, err = run_main(capsys)
    verbs = {line.split()[0] for line in err.splitlines() if line.startswith("  ")}
    assert code == 2 and out == "" and err.startswith("usage: ")
    assert verbs == {"run", "validate", "study", "sweep", "campaign", "durability", "aggregate", "report", "keys", "hardware",
                     "measures", "bench", "validation", "cluster"}


def test_run_prints_a_table_with_units_and_json_on_request(capsys, tmp_path):
    code, table, _ = run_main(capsys, "run", "unclean-election")
    assert code == 0
    code, text, _ = run_main(capsys, "run", "unclean-election", "--json")
    summary = json.loads(text)
    units = {m.name: m.unit for m in SUMMARY}
    rows = {line[2:].rsplit("  ", 1)[0].strip(): line.split() for line in table.splitlines() if line.startswith("  ")}
    labels = dict(RUN_TABLE)
    for key in ("records_acked", "acked_records_lost", "leader_elections", "produce_latency_ms_p99",
                "produce_latency_ms_p50", "unavailable_wall_ms"):
        value = summary[key]
        words = rows[labels[key]]
        shown = words[-1] if units[key] == "count" else words[-2]
        if isinstance(value, int) or float(value).is_integer():
            assert shown == f"{round(value):,}", key  # integers whole
        else:
            assert float(shown.replace(",", "")) == float(f"{value:.3g}"), key  # 3 significant digits
        if units[key] != "count":
            assert words[-1] == units[key], key
    assert summary["acked_records_lost"] > 0 and table.splitlines()[0].startswith("unclean-election: seed ")


def test_a_missing_extra_is_one_line_naming_it(capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    for args in (["aggregate", "acks_durability"], ["study"], ["sweep", "acks_durability", "--engine", "spark"]):
        line = one_line(*run_main(capsys, *args)[::2], f"{args[0]} needs the study extra (pyspark not installed)")
        assert line.endswith("pip install 'kafkamodel[study]' (Spark also needs Java 17+)")


def test_shipped_places_are_the_repositorys_in_a_checkout():
    from kafkamodel import paths

    assert paths.CHECKOUT == Path(__file__).resolve().parents[1]
    assert STUDIES == paths.CHECKOUT / "data" / "studies" and paths.NOTEBOOKS == paths.CHECKOUT / "notebooks"
    if not os.environ.get(paths.HOME_VARIABLE):
        assert paths.RUNS == paths.CHECKOUT / "data" / "runs" and paths.REPORTS == paths.CHECKOUT / "reports"


def test_an_installed_package_writes_a_shipped_campaigns_counterexamples_under_home(monkeypatch, tmp_path):
    from kafkamodel import paths

    spec = tmp_path / "mine" / "safety.yaml"
    assert paths.counterexamples(spec, "safety") == tmp_path / "mine" / "safety"  # beside a spec of one's own
    monkeypatch.setattr(paths, "CHECKOUT", None)  # as installed: the shipped spec lies inside the package
    monkeypatch.setattr(paths, "DATA", tmp_path / "home" / "data")
    shipped = paths.PACKAGE / "shipped" / "data" / "campaigns" / "safety.yaml"
    assert paths.counterexamples(shipped, "safety") == tmp_path / "home" / "data" / "campaigns" / "safety"
    assert paths.counterexamples(spec, "safety") == tmp_path / "mine" / "safety"


def test_a_file_where_a_studys_run_folder_goes_is_one_line(capsys, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "acks_durability").write_text("mine\n")
    line = one_line(*run_main(capsys, "sweep", "acks_durability", "--runs", str(runs))[::2], "--runs: ")
    assert line.endswith(f"{runs / 'acks_durability'} exists and is not a folder")
    assert listing(tmp_path) == {"runs/acks_durability": b"mine\n"}


def test_a_sweep_cleans_only_the_leftovers_it_names(tmp_path):
    from kafkamodel.folders import hidden_sibling
    from kafkamodel.kit.runs import clean_staging, staging_dir

    staging = staging_dir(tmp_path, "main-a67d0d5327-s1")
    staging.mkdir()
    staging.with_name(staging.name + ".ipynb").write_text("{}")
    hidden_sibling(tmp_path / "main-a67d0d5327-s1", "old").mkdir()
    (tmp_path / ".batch-0a1b2c3d.jsonl").write_text("{}\n")  # an engine's working file
    mine = {".lock": "", ".my-notes": "keep\n", ".deadbeef": "keep\n", "notes.txt": "keep\n"}
    for name, text in mine.items():
        (tmp_path / name).write_text(text)
    clean_staging(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(mine)


class _Untouchable:
    """Stands in for a Spark session or a sweep that must not be reached."""

    def __getattr__(self, name):
        raise AssertionError(f"used ({name}) before the output folder was checked")


def test_aggregate_refuses_a_users_folder_before_any_spark_work(tmp_path, monkeypatch):
    from kafkamodel.kit import aggregate as agg
    from kafkamodel.kit.spec import StudyError
    from kafkamodel.kit.specfile import load_spec

    spec = load_spec("recovery_protocols")
    mine = tmp_path / "processed" / spec.study / "mine.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("keep")
    monkeypatch.setattr(agg, "finished_runs", lambda study_dir: [study_dir / "a-run"])  # as if swept
    with pytest.raises(StudyError, match="aggregates folder: .* holds files kafkamodel did not write"):
        agg.aggregate(spec, spark=_Untouchable(), runs=tmp_path / "runs", processed=tmp_path / "processed")
    assert mine.read_text() == "keep"


def test_a_campaign_refuses_a_users_results_folder_before_it_runs(tmp_path, monkeypatch):
    from kafkamodel.campaign import command as campaign_run
    from kafkamodel.campaign.spec import SpecError

    mine = tmp_path / "processed" / "campaigns" / "safety" / "mine.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("keep")
    monkeypatch.setattr(campaign_run, "run_sweeps", _Untouchable())
    with pytest.raises(SpecError, match="aggregates folder: .* holds files kafkamodel did not write"):
        campaign_run.run_campaign("safety", schedules=1, runs=tmp_path / "runs", processed=tmp_path / "processed",
                                  report=False, progress=False)
    assert mine.read_text() == "keep"
