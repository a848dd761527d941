"""The package's layers import one way, read from the source (every import, function-level ones included).

config  <- sim (engine, storage, broker, controller, rules, clients, results)  <- study, campaign  <- cli, bench

sim reads config only as resolved settings (``config.settings``, and ``config.distributions`` to draw).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kafkamodel"

_SERVER_SIDE = ("kafkamodel.sim.engine", "kafkamodel.sim.storage", "kafkamodel.sim.broker", "kafkamodel.sim.controller",
                "kafkamodel.sim.rules", "kafkamodel.sim.results", "kafkamodel.sim.protocol", "kafkamodel.sim.state",
                "kafkamodel.sim.batches", "kafkamodel.config")
# a module (by prefix) -> the kafkamodel modules (by prefix) it may import; the longest prefix rules
# the model reads configuration as resolved settings (and draws from its distributions): never the schema or the
# version tables, so no rule of config is applied twice; only the simulation loads a scenario
SETTINGS = ("kafkamodel.config.settings", "kafkamodel.config.distributions")
ALLOWED = {
    "kafkamodel.config": ("kafkamodel.config",),
    "kafkamodel.sim": ("kafkamodel.sim", *SETTINGS, "kafkamodel.folders"),
    "kafkamodel.sim.simulation": ("kafkamodel.sim", *SETTINGS, "kafkamodel.config.scenario", "kafkamodel.folders"),
    # the engine and storage know nothing of the actors built on them
    "kafkamodel.sim.engine": ("kafkamodel.sim.engine", "kafkamodel.sim.protocol", *SETTINGS),
    "kafkamodel.sim.storage": ("kafkamodel.sim.storage", *SETTINGS),
    "kafkamodel.sim.protocol": (),
    # the broker and the controller know nothing of the clients (the group coordinator is the broker's)
    "kafkamodel.sim.broker": _SERVER_SIDE,
    "kafkamodel.sim.controller": _SERVER_SIDE,
    "kafkamodel.study": ("kafkamodel.study", "kafkamodel.sim", "kafkamodel.config", "kafkamodel.paths",
                         "kafkamodel.folders", "kafkamodel.theory", "kafkamodel"),
    # the validation set runs the model and reports with the study kit's presentation helpers
    "kafkamodel.validation": ("kafkamodel.validation", "kafkamodel.study", "kafkamodel.sim", "kafkamodel.config",
                              "kafkamodel.paths", "kafkamodel.folders", "kafkamodel"),
    "kafkamodel.campaign": ("kafkamodel.campaign", "kafkamodel.study", "kafkamodel.sim", "kafkamodel.config",
                            "kafkamodel.paths", "kafkamodel.folders", "kafkamodel"),
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path):
    """(imported module, names) for each import of a kafkamodel module in the file."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "kafkamodel":
                names = [a.name for a in node.names]
                if node.module is None or target == "kafkamodel":  # from . import a, b: modules or names
                    for name in names:
                        yield (f"{target}.{name}" if (PACKAGE.parent / f"{target}.{name}".replace(".", "/")).exists()
                               or (PACKAGE.parent / (f"{target}.{name}".replace(".", "/") + ".py")).exists()
                               else target), [name]
                else:
                    yield target, names
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kafkamodel":
                    yield alias.name, []


def _rule(module: str):
    keys = [k for k in ALLOWED if module == k or module.startswith(k + ".")]
    return ALLOWED[max(keys, key=len)] if keys else None


def _within(target: str, prefixes) -> bool:
    return any(target == p or target.startswith(p + ".") for p in prefixes)


def check(module: str, target: str, names) -> list[str]:
    """What is wrong with `module` importing `names` from `target`."""
    found = []
    allowed = _rule(module)
    if allowed is not None and not _within(target, allowed):
        found.append(f"{module} imports {target}")
    if module.startswith("kafkamodel.campaign") and target.startswith("kafkamodel.study"):
        found.extend(f"{module} uses study's private {target}.{n}" for n in names if n.startswith("_"))
    return found


def violations():
    return [v for path in sorted(PACKAGE.rglob("*.py")) for target, names in imports(path)
            for v in check(_module(path), target, names)]


def test_layers_import_one_way():
    scanned = sum(1 for path in PACKAGE.rglob("*.py") for _ in imports(path))
    assert scanned > 200  # the scan reads the package's own imports (not an empty tree)
    assert violations() == []


@pytest.mark.parametrize("module, target, names, broken", [
    ("kafkamodel.config.settings", "kafkamodel.sim.protocol", ["NONE"], True),
    ("kafkamodel.sim.engine.kernel", "kafkamodel.sim.broker.leader", ["LeaderRole"], True),
    ("kafkamodel.sim.broker.leader", "kafkamodel.study.point", ["run_point"], True),
    ("kafkamodel.sim.broker.leader", "kafkamodel.config.settings", ["ACKS_ALL"], False),
    ("kafkamodel.sim.faults", "kafkamodel.config.schema", ["CONSUMER_FAULTS"], True),
    ("kafkamodel.sim.simulation", "kafkamodel.config.versions", ["mechanisms"], True),
    ("kafkamodel.campaign.spec", "kafkamodel.study.spec", ["_private"], True),
])
def test_the_rule_catches_a_wrong_import(module, target, names, broken):
    assert bool(check(module, target, names)) == broken


def test_every_package_has_its_init():
    """setuptools finds packages by their __init__.py: a folder of modules without one would be left out of the wheel."""
    missing = [str(d.relative_to(PACKAGE.parent)) for d in PACKAGE.rglob("*")
               if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")) and not (d / "__init__.py").exists()]
    assert missing == []
