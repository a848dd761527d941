"""The ``durability`` study: configurations x failure-rate profiles -> reports/durability.html and .json.

::

    make durability                                   # data/durability/studies/durability.yaml
    python -m kafkamodel.durability.study [SPEC] [--runs DIR] [--reports DIR] [--windows N] [--workers N]
        [--engine local|papermill|spark] [--master URL]

A study spec is a durability spec (``spec``) without ``failures``, plus
``profiles`` (name -> ``about``, ``failures``, and ``sources``: for every
failure key where its value comes from, or ``assumption: ...``) and
``fsync_debate`` (pairs ``[without fsync, with fsync]`` of configuration
names: the report's first line compares them), and optionally ``compare``
(pairs ``[one, other]``: the report's other questions, each a line the same
way: one zone vs three, 3.9 vs 4.1). Each profile is one run of the
verb's estimator (``command.run_durability``) into ``RUNS/<profile>/``, every
profile sharing one folder of detailed runs (``RUNS/runs``): a killed study, or
a rerun with more windows, runs only what it has not run. Not part of
``make study``: it takes minutes (docs/durability.md gives the measured time).
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ..command import UsageError, positive_int
from ..config.scenario import did_you_mean, unknown_key
from ..folders import FolderError, check_file_replaceable, writable_folder, write_atomic
from ..kit import StudyError, load_spec_file, named
from ..kit.fields import Field, read
from ..paths import REPORTS, RUNS
from . import spec as S
from .estimate import DetailedRunError
from .command import ASSUMPTIONS, check_engine_options, nines, run_durability

STUDIES = S.DURABILITY / "studies"  # shipped durability studies
# a durability study's keys: a durability spec's (but failures, which each profile gives) and its own
STUDY = {**{k: f for k, f in S.SPEC.items() if k != "failures"}, "profiles": Field(), "fsync_debate": Field(),
         "compare": Field()}
PROFILE = {"about": Field(), "failures": Field(), "sources": Field()}
P = "loss_probability_per_partition_year"


@dataclass(frozen=True)
class Profile:
    name: str
    about: str
    sources: Mapping[str, str]
    spec: S.DurabilitySpec  # the study's configurations under this profile's failures


@dataclass(frozen=True)
class DurabilityStudy:
    source: str
    profiles: tuple  # of Profile
    fsync_debate: tuple  # of (without, with) configuration names
    compare: tuple = ()  # of (one, other) configuration names: the report's other questions


def load_study(spec: "str | Path") -> DurabilityStudy:
    """A validated study from a name (data/durability/studies/NAME.yaml) or a path; SpecError lists every problem."""
    p = Path(spec)
    path = p if p.suffix in (".yaml", ".yml") or p.exists() else STUDIES / f"{spec}.yaml"
    return load_spec_file(spec, path, STUDIES, "durability study", STUDY, _build)


def _build(data: Mapping, path: Path, problems: list[str]) -> DurabilityStudy | None:
    raw = data.get("profiles")
    if not isinstance(raw, Mapping) or not raw:
        problems.append("profiles: must be a non-empty mapping of name -> {about, failures, sources}")
        return None
    common = {k: v for k, v in data.items() if k in S.SPEC}
    profiles = []
    for name, prof, where in named(raw, "profiles", "profile", problems):
        prof = read(prof, PROFILE, where, problems, what=f" of {', '.join(PROFILE)}")
        if not prof:
            continue
        sources = prof.get("sources")
        if not isinstance(sources, Mapping):
            problems.append(f"{where}.sources: must map every failure key to its source or 'assumption: ...'")
            sources = {}
        failures = prof.get("failures")
        unset = {k for keys in S.OFF_BY_DEFAULT if not _set(failures, keys[0]) for k in keys}
        problems.extend(f"{where}.sources.{k}: missing (every rate is stated with its source or marked as an "
                        "assumption)" for k in S.FAILURES
                        if k not in unset and not str(sources.get(k) or "").strip())
        problems.extend(unknown_key(k, S.FAILURES, f"{where}.sources.{k}") for k in sources if k not in S.FAILURES)
        inner: list[str] = []
        built = S._build(read({**common, "failures": prof.get("failures")}, S.SPEC, "", inner), path, inner)
        problems.extend(p.replace("failures.", f"{where}.failures.", 1) if p.startswith("failures.") else p
                        for p in inner)
        if built is not None:
            profiles.append(Profile(name, str(prof.get("about") or name), {k: str(v) for k, v in sources.items()},
                                    built))
    names = {c.name for p in profiles for c in p.spec.configurations}
    pairs = _pairs(data, "fsync_debate", "[without fsync, with fsync]", names if profiles else None, problems)
    if not pairs:
        problems.append("fsync_debate: must list at least one pair [without fsync, with fsync]")
    compare = _pairs(data, "compare", "[one, other]", names if profiles else None, problems)
    if problems:
        return None
    return DurabilityStudy(str(path), tuple(profiles), pairs, compare)


def _pairs(data: Mapping, key: str, shape: str, names: set | None, problems: list[str]) -> tuple:
    """The spec's list `key` of pairs of configuration names (each checked against `names` when known)."""
    raw = data.get(key) or []
    if not isinstance(raw, list):
        problems.append(f"{key}: must be a list of pairs {shape} of configuration names")
        return ()
    pairs = []
    for i, pair in enumerate(raw):
        if not (isinstance(pair, list) and len(pair) == 2):
            problems.append(f"{key}[{i}]: must be a pair {shape} of configuration names")
            continue
        for c in pair:
            if names is not None and c not in names:
                problems.append(f"{key}[{i}]: no configuration {c!r}" + did_you_mean(str(c), sorted(names)))
        pairs.append(tuple(pair))
    return tuple(pairs)


def _set(failures: Any, rate_key: str) -> bool:
    """Whether a profile turns on a process that is off by default (its rate, a number or {zone: rate}, not 0)."""
    if not isinstance(failures, Mapping):
        return False
    v = failures.get(rate_key, 0)
    return any(r != 0 for r in v.values()) if isinstance(v, Mapping) else v != 0


def nines_value(p: float, high: float) -> tuple[float, bool]:
    """(nines, whether only a lower bound): -log10 p, or with none observed -log10 of the upper bound."""
    if p > 0:
        return -math.log10(p), False
    return (-math.log10(high), True) if high > 0 else (math.inf, True)


def _nines_text(row: Mapping) -> str:
    return nines(row[P], row[P + "_high"])


def pair_text(rows: list[dict], one: str, other: str, profiles, word: str) -> str:
    """`one` -> `other`: the nines of both under every profile, in how many profiles the 95% intervals separate
    them, and by how many nines (`word` +x: `other` loses less) where they do; no order where they overlap."""
    at = {(r["profile"], r["configuration"]): r for r in rows}
    gains = []
    for prof in profiles:
        a, b = at[(prof, one)], at[(prof, other)]
        if b[P + "_high"] < a[P + "_low"] or a[P + "_high"] < b[P + "_low"]:
            gains.append(nines_value(b[P], b[P + "_high"])[0] - nines_value(a[P], a[P + "_high"])[0])
    where = " / ".join(f"{_nines_text(at[(p, one)])} -> {_nines_text(at[(p, other)])}" for p in profiles)
    text = f"{one} -> {other}: {where} nines over {', '.join(profiles)}; the 95% intervals separate in " \
           f"{len(gains)} of {len(profiles)}"
    if gains:
        lo, hi = min(gains), max(gains)
        text += f" ({word} {lo:+.1f}" + ("" if f"{lo:+.1f}" == f"{hi:+.1f}" else f" to {hi:+.1f}") + " nines there)"
    else:
        text += " (these windows cannot tell them apart)"
    return text


def fsync_answer(rows: list[dict], pairs, profiles) -> str:
    """The report's first line, from the numbers only: for each pair (without, with fsync) ``pair_text``."""
    return "Fsync, by these numbers: " + "; ".join(pair_text(rows, a, b, profiles, "fsync") for a, b in pairs) + "."


def comparisons(rows: list[dict], pairs, profiles) -> list[str]:
    """The spec's other questions (``compare``), one line each, as the fsync answer's (``pair_text``)."""
    return [pair_text(rows, a, b, profiles, b) + "." for a, b in pairs]


def run_study(spec="durability", *, runs: Path | None = None, reports: Path | None = None,
              windows: int | None = None, progress: bool = True, say=None, workers: int | None = None,
              engine: str = "local", master: str | None = None, spark=None) -> Path:
    """Every profile through the verb's estimator, then reports/durability.json and .html; returns the HTML.
    `engine` spark: one session for every profile (`spark`, left running, or one started on `master`)."""
    t0 = time.perf_counter()
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    check_engine_options(engine, master, spark)
    study = load_study(spec)
    runs = writable_folder(runs or RUNS / "durability", "--runs")
    reports = writable_folder(reports or REPORTS, "--reports")
    for name in ("durability.json", "durability.html"):  # refused now, not after the simulations
        check_file_replaceable(reports / name, "--reports")
    rows, details = [], {}
    with ExitStack() as stack:
        if engine == "spark" and spark is None:  # one session for every profile, not one each
            from ..kit import spark_session

            spark = stack.enter_context(spark_session(master, app_name="kafkamodel durability study"))
        for i, prof in enumerate(study.profiles, 1):
            loaded = prof.spec if windows is None else replace(prof.spec, windows=windows)
            say(f"durability study: profile {i}/{len(study.profiles)} {prof.name} ({prof.about})")
            got, path = run_durability(loaded, runs / prof.name, progress=progress, say=say, runs=runs / "runs",
                                       workers=workers, engine=engine, spark=spark)
            rows.extend({"profile": prof.name, **r} for r in got)
            details[prof.name] = json.loads((path.parent / "durability-details.json").read_text())
    names = [p.name for p in study.profiles]
    answer = fsync_answer(rows, study.fsync_debate, names)
    record = {
        "answer": answer, "comparisons": comparisons(rows, study.compare, names), "spec": study.source,
        "rows": rows,
        "profiles": {p.name: {"about": p.about, "failures": details[p.name]["failures"], "sources": dict(p.sources)}
                     for p in study.profiles},
        "configurations": {c["configuration"]: c["overrides"] for c in details[names[0]]["configurations"]},
        "cluster": [{"profile": p, "configuration": c["configuration"], **c["loss_probability_per_cluster_year"]}
                    for p in names for c in details[p]["configurations"]],
        "scenario": details[names[0]]["scenario"], "windows": details[names[0]]["windows"], "seed": details[names[0]]["seed"],
        "method": details[names[0]]["method"], "assumptions": list(ASSUMPTIONS),
        "seconds": round(time.perf_counter() - t0, 1),
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "written_by": "kafkamodel durability study",
    }
    write_atomic(reports / "durability.json", json.dumps(record, indent=1, default=str) + "\n")
    out = reports / "durability.html"
    write_atomic(out, render(record))
    say(answer)
    say(f"durability study: {out} ({record['seconds']:.0f} s)")
    return out


def _plot(record: Mapping) -> str:
    """Nines per configuration, one marker per profile, the 95% interval as a bar; base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(record["configurations"])
    profiles = list(record["profiles"])
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=110)
    width = 0.8 / len(profiles)
    top = 0.0
    points = []
    for j, prof in enumerate(profiles):
        for i, c in enumerate(configs):
            r = next(r for r in record["rows"] if r["profile"] == prof and r["configuration"] == c)
            mid, bound = nines_value(r[P], r[P + "_high"])
            lo = -math.log10(r[P + "_high"]) if r[P + "_high"] > 0 else mid
            hi = -math.log10(r[P + "_low"]) if r[P + "_low"] > 0 else None
            points.append((i + (j - (len(profiles) - 1) / 2) * width, mid, lo, hi, bound, j))
            top = max(top, mid, hi or 0)
    cap = top + 1.5
    for x, mid, lo, hi, bound, j in points:
        color = f"C{j}"
        upper = hi if hi is not None else cap
        ax.plot([x, x], [lo, upper], color=color, lw=2, alpha=0.6)
        ax.plot([x], [mid], marker="^" if bound else "o", color=color, ms=7,
                label=profiles[j] if (x, j) == next((p[0], p[5]) for p in points if p[5] == j) else None)
    ax.set_xticks(range(len(configs)), configs, rotation=25, ha="right")
    ax.set_ylabel("nines: -log10 P(loss per partition-year)")
    ax.set_ylim(0, cap)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="profile (triangle: none lost, lower bound)", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def render(record: Mapping) -> str:
    """The report as one offline HTML page: the answer, the table in nines, the plot, every assumption."""
    e = html.escape
    configs = list(record["configurations"])
    profiles = list(record["profiles"])
    at = {(r["profile"], r["configuration"]): r for r in record["rows"]}

    def interval(r):
        lo, hi = r[P + "_high"], r[P + "_low"]
        a = f"{-math.log10(lo):.1f}" if lo > 0 else "inf"
        b = f"{-math.log10(hi):.1f}" if hi > 0 else "inf"
        return f"[{a}, {b}]"

    head = "".join(f"<th>{e(p)}</th>" for p in profiles)
    nines_rows = "".join(
        f"<tr><th>{e(c)}</th>" + "".join(
            f"<td title='P = {at[(p, c)][P]:.3g} [{at[(p, c)][P + '_low']:.3g}, {at[(p, c)][P + '_high']:.3g}]'>"
            f"<b>{e(_nines_text(at[(p, c)]))}</b> <small>{interval(at[(p, c)])}</small><br>"
            f"<small>P {at[(p, c)][P]:.3g} [{at[(p, c)][P + '_low']:.3g}, {at[(p, c)][P + '_high']:.3g}]</small></td>"
            for p in profiles) + "</tr>" for c in configs)
    other_rows = "".join(
        f"<tr><th>{e(c)}</th>" + "".join(
            f"<td>{at[(p, c)]['acked_records_lost_per_year']:.3g} / {at[(p, c)]['unavailable_minutes_per_year']:.3g}</td>"
            for p in profiles) + "</tr>" for c in configs)
    cluster = {(r["profile"], r["configuration"]): r for r in record.get("cluster", [])}
    cluster_rows = "".join(
        f"<tr><th>{e(c)}</th>" + "".join(
            f"<td>{cluster[(p, c)]['p']:.3g} <small>[{cluster[(p, c)]['low']:.3g}, {cluster[(p, c)]['high']:.3g}]"
            "</small></td>" if (p, c) in cluster else "<td></td>" for p in profiles) + "</tr>" for c in configs)
    keys = list(S.FAILURES)
    rate_rows = "".join(
        f"<tr><th>{e(k)}</th>" + "".join(
            f"<td><b>{e(str(record['profiles'][p]['failures'][k]))}</b><br><small>"
            f"{e(record['profiles'][p]['sources'].get(k, ''))}</small></td>" for p in profiles) + "</tr>"
        for k in keys)
    config_rows = "".join(f"<tr><th>{e(c)}</th><td><code>{e(json.dumps(o))}</code></td></tr>"
                          for c, o in record["configurations"].items())
    about = "".join(f"<li><b>{e(p)}</b>: {e(v['about'])}</li>" for p, v in record["profiles"].items())
    assumptions = "".join(f"<li>{e(a)}</li>" for a in record["assumptions"])
    compared = ("<p>The other questions, the same way (nines of the first -> the second; the second's change "
                "where the intervals separate):</p><ul id=\"comparisons\">"
                + "".join(f"<li>{e(line)}</li>" for line in record["comparisons"]) + "</ul>"
                if record.get("comparisons") else "")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Durability in nines: kafkamodel</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}}
table{{border-collapse:collapse;margin:.5em 0 1.2em}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;
vertical-align:top}}th{{background:#f4f4f4}}.answer{{font-size:1.15em;background:#fff8e0;padding:.6em;
border-left:4px solid #e0a800}}small{{color:#555}}</style></head><body>
<h1>Durability in nines</h1>
<p class="answer" id="answer">{e(record['answer'])}</p>
{compared}<p>Yearly probability that a partition loses acknowledged records, in nines (&minus;log10 P), per configuration
and failure-rate profile, with the 95% interval in nines; a value starting with &ge; means no loss was seen and is
the rule-of-three bound. {record['windows']} failure windows per replica layout and profile, seed
{record['seed']}; {e(record['method'])}. This run took {record['seconds']:.0f} s (detailed runs already in
the runs folder are reused, not run again).</p>
<h2>Nines per configuration and profile</h2>
<table id="nines"><tr><th>configuration</th>{head}</tr>{nines_rows}</table>
<img alt="nines per configuration and profile" src="data:image/png;base64,{_plot(record)}">
<h2>Probability of any loss in the cluster per year</h2>
<p>The first loss in any partition of the cluster: the point from the same failure process run over every
broker (each partition's replica list checked at every event, so a zone event that hits many partitions counts
once); the 95% interval from the partitions' own: at least the likeliest partition's low end, at most the sum of
every partition's high end (the union bound). The cluster sampler's own interval is not used (heavy-tailed weights:
docs/durability.md).</p>
<table id="cluster"><tr><th>configuration</th>{head}</tr>{cluster_rows}</table>
<h2>Acknowledged records lost per year (cluster) / unavailable minutes per year (partition)</h2>
<table><tr><th>configuration</th>{head}</tr>{other_rows}</table>
<h2>Failure-rate profiles and their sources</h2><ul>{about}</ul>
<table><tr><th>key</th>{head}</tr>{rate_rows}</table>
<h2>Configurations (overrides of the scenario {e(str(record['scenario']))}; spec {e(str(record['spec']))})</h2>
<table>{config_rows}</table>
<h2>Assumptions</h2><ul>{assumptions}</ul>
<p><small>{e(record['written_by'])}, {e(record['generated_at'])}. Method and sources: docs/durability.md.</small></p>
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kafkamodel.durability.study", description=__doc__.split("\n")[0])
    ap.add_argument("spec", nargs="?", default="durability", help="a study name (data/durability/studies/) or a file")
    ap.add_argument("--runs", type=Path, help="folder of the per-profile results and detailed runs "
                                              "(default data/runs/durability; reused by a rerun)")
    ap.add_argument("--reports", type=Path, help="folder for durability.html and durability.json (default reports/)")
    ap.add_argument("--windows", type=positive_int("--windows"),
                    help="failure windows per replica layout (default: the spec's)")
    ap.add_argument("--workers", type=positive_int("--workers"), help="processes (local) or notebook kernels "
                                                                      "(papermill) running the detailed runs "
                                                                      "(default: cores)")
    ap.add_argument("--engine", default="local", help="local (this process or a process pool), papermill or spark: "
                                                      "the detailed runs as the campaign's sweep points; the same numbers")
    ap.add_argument("--master", help="with --engine spark: the Spark master URL (default: local[*])")
    try:
        args = ap.parse_args(argv)
    except UsageError as exc:  # the command line's one-line rule (kafkamodel.command's option types)
        print(exc, file=sys.stderr)
        return 2
    try:
        run_study(args.spec, runs=args.runs, reports=args.reports, windows=args.windows, workers=args.workers,
                  engine=args.engine, master=args.master)
    except StudyError as exc:  # a bad spec or flag (SpecError is one)
        print(exc.problems[0], file=sys.stderr)
        return 2
    except FolderError as exc:
        print(exc, file=sys.stderr)
        return 2
    except DetailedRunError as exc:  # one line; the detailed runs that finished are kept
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
