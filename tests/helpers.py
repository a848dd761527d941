"""What several test files share (no test file imports another): the browser the browser tests drive, Java's
hashes the request tests compute Kafka's fetcher ids with, a campaign spec and a sweep spec to change and run, a
bounced broker's leaderships (the operations' and the controller's preferred-leader tests), and the pages of memory
the process holds (what the runs that give memory back are checked by).

Test files import the helpers in tests/ one way, by module name (``from helpers import ...``, ``from shipped
import ...``): pytest puts tests/ on the path (tests/conftest.py is its rootdir's conftest)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kafkamodel.paths import CAMPAIGNS

# ---- the browser (test_browser, test_campaign's report) -------------------------------------------------------
CHROMIUM = os.environ.get("KAFKAMODEL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 800}


def need_browser():
    """Skip (or, with KAFKAMODEL_REQUIRE_BROWSER=1, fail) when Debian's Chromium or Playwright is missing."""
    missing = None
    if not Path(CHROMIUM).is_file():
        missing = f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "Playwright is not installed (pip install -e '.[test]')"
    if missing and os.environ.get("KAFKAMODEL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required: {missing}")
    if missing:
        pytest.skip(missing)


# ---- Kafka's fetcher ids, computed independently of the model (test_requests, the requests study's tests) --------
def java_hash(text: str) -> int:
    """Java's String.hashCode, written here from its definition: s[0]*31^(n-1) + ... + s[n-1], as an int."""
    h = sum(ord(c) * 31 ** (len(text) - 1 - i) for i, c in enumerate(text)) % 2**32
    return h - 2**32 if h >= 2**31 else h


def fetcher_of(topic: str, partition: int, fetchers: int) -> int:
    """Kafka's AbstractFetcherManager.getFetcherId."""
    x = (31 * java_hash(topic) + partition) % 2**32
    x = x - 2**32 if x >= 2**31 else x
    return (0 if x == -2**31 else abs(x)) % fetchers


# ---- specs to change and run (test_campaign, test_kit_engines_spark, test_object_store) -------------------------
SAFETY = CAMPAIGNS / "safety.yaml"

# the engines' sweep: two acks settings x two seeds
ENGINES_SPEC = """\
study: engines
notebook: 00_explore.ipynb
base: acks1-leader-crash
seeds: 2
grid:
  producers[*].acks: [1, all]
"""


def campaign_spec_file(folder: Path, change=None, name: str = "safety") -> Path:
    """The shipped safety campaign's spec, changed by `change(dict)`, written to `folder`."""
    data = yaml.safe_load(SAFETY.read_text())
    data["campaign"] = name
    if change:
        change(data)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---- a bounced broker's leaderships (test_operations, test_sim_controller_replication) ---------------------------

# broker 0 shut down (its leaderships move away) and restarted: the cluster is imbalanced after
BOUNCE = [{"at.ms": 1000, "kind": "controlled_shutdown", "broker": 0}, {"at.ms": 1500, "kind": "restart", "broker": 0}]


def led_by(result, b):
    """Partitions broker b led at the start (its preferred ones: replicas listed first)."""
    parts = result.partitions
    return [int(p) for p, r in zip(parts["partition"], parts["replicas"]) if int(str(r).split(",")[0]) == b]


def preferred_elections(result):
    ev = result.events
    return ev[(ev["kind"] == "leader_election") & ev["detail"].str.startswith("preferred")]


# ---- running sweep points in worker processes (conftest's tiny studies) ------------------------------------------
def run_point_into(point, out) -> None:
    """execute_point in a worker process, its run folder written, nothing sent back (the Result stays there)."""
    from kafkamodel.kit.point import execute_point

    execute_point(point, out)


# ---- memory given back (test_sim_batches, test_sim_results_latency, test_sim_results_accounting) --------------
def held_pages(address: int, nbytes: int) -> int:
    """Pages of the memory [address, address + nbytes) the process holds (their present bit in /proc/self/pagemap;
    a page only read may count too: the kernel's zero page mapped there); skips the test where it cannot be read."""
    import mmap

    import numpy as np

    page = mmap.PAGESIZE
    first, stop = address // page, -(-(address + nbytes) // page)
    try:
        with open("/proc/self/pagemap", "rb") as f:
            f.seek(first * 8)
            entries = np.frombuffer(f.read((stop - first) * 8), dtype=np.uint64)
    except OSError:
        pytest.skip("no /proc/self/pagemap to read")
    return int(np.count_nonzero(entries >> np.uint64(63)))


def column_span(column) -> tuple[int, int]:
    """An ``array.array``'s buffer: its address and bytes."""
    address, rows = column.buffer_info()
    return address, rows * column.itemsize
