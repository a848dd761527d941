"""kafkamodel/durability/command.py: the durability verb (a bad spec exits 2 in one line with nothing written, a
file the kit did not write is not replaced, the same file with one or two workers, a failed detailed run
reported in one line with the finished ones kept)."""

from __future__ import annotations

import json

from kafkamodel.cli import main
from kafkamodel.durability import command as run_module, windows as W
from kafkamodel.durability.estimate import estimate
from kafkamodel.durability.spec import load_durability
from durability_specs import EVERY_CLASS, NO_FAILURES
from durability_specs import failures_spec as _spec, json_files as _files


def test_bad_spec_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys):
    spec = _spec(tmp_path, {"zone.outage.per.year": {"z": 1}})
    out = tmp_path / "out"
    assert main(["durability", str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "failures.zone.outage.per.year.z: no zone 'z'" in err
    assert not out.exists()


def test_a_file_the_kit_did_not_write_is_not_replaced(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "durability.json").write_text("mine\n")
    spec = _spec(tmp_path, NO_FAILURES)
    assert main(["durability", str(spec), "--out", str(out)]) == 2
    assert "is in the way" in capsys.readouterr().err
    assert (out / "durability.json").read_text() == "mine\n"


def _failing_measure(scenario, topic, partition, replicas, pattern, returns, slow_factor=None):
    if pattern[-1][0] == W.POWER_LOSS:
        raise RuntimeError("the disk\nis on fire")
    return 0


def test_the_verb_gives_the_same_file_with_one_or_two_workers(tmp_path):
    """The real detailed model, a tiny spec: `--workers 1` and `--workers 2` write the same durability.json and
    the same measured classes."""
    spec = _spec(tmp_path, {**NO_FAILURES, "zone.power.loss.per.year": 2.0, "broker.crash.per.year": 2},
                 configurations={"one_zone": EVERY_CLASS["one_zone"]}, windows=2, seed=7)  # 3 classes: 6 runs
    out = {}
    for workers in (1, 2):
        folder = tmp_path / f"out{workers}"
        assert main(["durability", str(spec), "--out", str(folder), "--workers", str(workers)]) == 0
        details = json.loads((folder / "durability-details.json").read_text())
        assert details["workers"] == workers
        out[workers] = ((folder / "durability.json").read_text(), details["configurations"], _files(folder / "runs"))
    classes = out[1][1][0]["classes_records_lost"]
    assert len(classes) >= 2 and classes["RF 3: power_loss x3"] > 0  # power loss in one zone loses, acks=1
    assert out[1] == out[2]


def test_a_failed_detailed_run_is_one_line_and_the_finished_ones_are_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_module, "estimate", __import__("functools").partial(estimate, measure=_failing_measure))
    spec = _spec(tmp_path, {**NO_FAILURES, "zone.power.loss.per.year": 2.0, "broker.crash.per.year": 5},
                 configurations={"one_zone": EVERY_CLASS["one_zone"]}, windows=30)
    out = tmp_path / "out"
    assert main(["durability", str(spec), "--out", str(out), "--workers", "2"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "%" not in line]  # not the progress bar
    assert len([line for line in err if line.startswith("error:")]) == 1 and err[-1].startswith("error:"), err
    err = err[-1]
    jobs = sorted(_classes(spec))
    failing = [steps for steps in jobs if steps[-1][0] == W.POWER_LOSS]
    first = " then ".join(f"{kind} x{size}" for kind, size in failing[0])
    assert (f"configuration 'one_zone', RF 3: {first} failed: RuntimeError: the disk is on fire "
            f"({len(failing)} of {len(jobs)} detailed runs failed;") in err, err
    assert not (out / "durability.json").exists()
    kept = [json.loads(t) for t in _files(out / "runs").values()]  # every run that finished
    assert len(kept) == len(jobs) - len(failing) > 0
    assert all(k["acked_records_lost"] == 0 and k["pattern"][-1][0] != W.POWER_LOSS for k in kept)


def _classes(spec):
    """The classes the estimator sends to the detailed model, by a measure that only records them."""
    seen = []

    def record(scenario, topic, partition, replicas, pattern, returns, slow_factor=None):
        seen.append(tuple((kind, len(hit)) for kind, hit in pattern))
        return 0

    estimate(load_durability(spec), progress=False, measure=record)
    return seen
