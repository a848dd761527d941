"""The package's layers import one way, read from the source (every import, function-level ones included).

config  <- sim (engine, storage, broker, controller, rules, clients, results)  <- kit
        <- studies, campaign, durability, validation, cluster  <- cli, bench

Each package's verbs are its ``command`` module (``kafkamodel.command`` holds what they share; ``cli`` only
dispatches to them): a command module may import ``kafkamodel.command`` besides what its package may.

sim reads config only as resolved settings (``config.settings``, and ``config.distributions`` to draw). The kit
knows none of what is built on it; what is built on it uses the kit's public names only (``kafkamodel.kit``'s
``__all__``), never a kit module directly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kafkamodel"

# a module (by prefix) -> the kafkamodel modules (by prefix) it may import; the longest prefix rules
# the model reads configuration as resolved settings (and draws from its distributions): never the schema or the
# version tables (a version's rules come resolved, as settings.kafka's mechanisms), so no rule of config is applied
# twice; only the simulation loads a scenario
SETTINGS = ("kafkamodel.config.settings", "kafkamodel.config.distributions")
_SERVER_SIDE = ("kafkamodel.sim.engine", "kafkamodel.sim.storage", "kafkamodel.sim.broker", "kafkamodel.sim.controller",
                "kafkamodel.sim.rules", "kafkamodel.sim.results", "kafkamodel.sim.protocol", "kafkamodel.sim.state",
                "kafkamodel.sim.batches", *SETTINGS)
ALLOWED = {
    "kafkamodel.config": ("kafkamodel.config",),
    "kafkamodel.sim": ("kafkamodel.sim", *SETTINGS, "kafkamodel.folders"),
    "kafkamodel.sim.simulation": ("kafkamodel.sim", *SETTINGS, "kafkamodel.config.scenario", "kafkamodel.folders"),
    # the model's verbs (run, validate, keys, hardware, measures): the command line's shared names, a scenario
    # loaded by name, the schema, versions and hardware profiles they list (the command line, not the model)
    "kafkamodel.sim.command": ("kafkamodel.sim", "kafkamodel.config", "kafkamodel.folders", "kafkamodel.command"),
    # the engine and storage know nothing of the actors built on them
    "kafkamodel.sim.engine": ("kafkamodel.sim.engine", "kafkamodel.sim.protocol", *SETTINGS),
    "kafkamodel.sim.storage": ("kafkamodel.sim.storage", *SETTINGS),
    "kafkamodel.sim.protocol": (),
    # the broker and the controller know nothing of the clients (the group coordinator is the broker's)
    "kafkamodel.sim.broker": _SERVER_SIDE,
    "kafkamodel.sim.controller": _SERVER_SIDE,
    # the machinery: the model, its configuration, the paths; none of what is built on it
    "kafkamodel.kit": ("kafkamodel.kit", "kafkamodel.sim", "kafkamodel.config", "kafkamodel.paths",
                       "kafkamodel.folders", "kafkamodel"),
    "kafkamodel.kit.command": ("kafkamodel.kit", "kafkamodel.sim", "kafkamodel.config", "kafkamodel.paths",
                               "kafkamodel.folders", "kafkamodel", "kafkamodel.command"),
    # built on the kit (through its public names: check)
    "kafkamodel.studies": ("kafkamodel.studies", "kafkamodel.kit", "kafkamodel.sim", "kafkamodel.config",
                           "kafkamodel.paths", "kafkamodel.folders", "kafkamodel.theory", "kafkamodel"),
    "kafkamodel.validation": ("kafkamodel.validation", "kafkamodel.kit", "kafkamodel.sim", "kafkamodel.config",
                              "kafkamodel.paths", "kafkamodel.folders", "kafkamodel", "kafkamodel.command"),
    "kafkamodel.campaign": ("kafkamodel.campaign", "kafkamodel.kit", "kafkamodel.sim", "kafkamodel.config",
                            "kafkamodel.paths", "kafkamodel.folders", "kafkamodel", "kafkamodel.command"),
    # your cluster: imported into a scenario, calibrated, reported on (with the durability estimate)
    "kafkamodel.cluster": ("kafkamodel.cluster", "kafkamodel.command", "kafkamodel.durability", "kafkamodel.kit",
                           "kafkamodel.sim", "kafkamodel.config", "kafkamodel.paths", "kafkamodel.folders", "kafkamodel"),
    # what every verb's command module shares
    "kafkamodel.command": ("kafkamodel.config", "kafkamodel.paths"),
    # the durability study reads its base scenario as a campaign does
    "kafkamodel.durability": ("kafkamodel.durability", "kafkamodel.campaign.spec", "kafkamodel.kit", "kafkamodel.sim",
                              "kafkamodel.config", "kafkamodel.paths", "kafkamodel.folders", "kafkamodel",
                              "kafkamodel.command"),
}


def _module(path: Path, root: Path = PACKAGE.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = PACKAGE.parent):
    """(imported module, names) for each import of a kafkamodel module in the file (`root`: the folder that holds
    the kafkamodel package)."""
    module = _module(path, root)
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
                        yield (f"{target}.{name}" if (root / f"{target}.{name}".replace(".", "/")).exists()
                               or (root / (f"{target}.{name}".replace(".", "/") + ".py")).exists()
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
    # "kafkamodel" alone is the package's own names (__version__, load_scenario), not everything under it
    return any(target == p or (p != "kafkamodel" and target.startswith(p + ".")) for p in prefixes)


KIT = "kafkamodel.kit"
BUILT_ON_KIT = ("kafkamodel.studies", "kafkamodel.campaign", "kafkamodel.durability", "kafkamodel.validation",
                "kafkamodel.cluster")


def _kit_public() -> set[str]:
    import kafkamodel.kit

    return set(kafkamodel.kit.__all__)


def check(module: str, target: str, names) -> list[str]:
    """What is wrong with `module` importing `names` from `target`."""
    found = []
    allowed = _rule(module)
    if allowed is not None and not _within(target, allowed):
        found.append(f"{module} imports {target}")
    if _within(module, BUILT_ON_KIT) and _within(target, (KIT,)):
        public = _kit_public()
        if target == KIT:
            found.extend(f"{module} uses {KIT}.{n}, not one of the kit's public names" for n in names
                         if n not in public)
        elif target.removeprefix(KIT + ".") not in public:  # only a public module of the kit (plots) as a whole
            found.append(f"{module} imports the kit's module {target}, not the kit's public names")
    return found


def violations(root: Path = PACKAGE.parent):
    return [v for path in sorted((root / "kafkamodel").rglob("*.py")) for target, names in imports(path, root)
            for v in check(_module(path, root), target, names)]


def import_graph(root: Path = PACKAGE.parent) -> dict[str, set[str]]:
    """module -> the kafkamodel modules it imports (a name imported from a package counts as the package)."""
    files = sorted((root / "kafkamodel").rglob("*.py"))
    modules = {_module(path, root) for path in files}
    graph = {}
    for path in files:
        module = _module(path, root)
        for target, _ in imports(path, root):
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target != module:
                graph.setdefault(module, set()).add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph`: its strongly connected components of more than one module (Tarjan's)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_layers_import_one_way():
    scanned = sum(1 for path in PACKAGE.rglob("*.py") for _ in imports(path))
    assert scanned > 200  # the scan reads the package's own imports (not an empty tree)
    assert violations() == []


def test_no_import_cycle():
    """No module imports, through others, a module that imports it back: every import counted, function-level ones
    included (a cycle a lazy import hides still ties the two modules together)."""
    graph = import_graph()
    assert sum(len(t) for t in graph.values()) > 200
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "d": {"a"}}) == []


def _plant(root: Path, module: str, source: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    for folder in path.parents:  # every package its __init__.py
        if folder == root:
            break
        (folder / "__init__.py").touch()
    path.write_text(source)


def test_a_planted_leak_fails_the_layer_check(tmp_path):
    """A controller module that reads a version rule from config.versions (as sim/controller/replication.py once
    did, instead of settings.kafka's resolved mechanisms) is flagged; one that reads settings is not; and a study
    module reaching into a kit module is flagged."""
    _plant(tmp_path, "kafkamodel.sim.controller.leak", "from ...config.versions import at_least\n")
    _plant(tmp_path, "kafkamodel.sim.controller.fine", "from ...config.settings import ACKS_ALL\n")
    _plant(tmp_path, "kafkamodel.studies.leak", "from ..kit.present import number\n")
    _plant(tmp_path, "kafkamodel.studies.fine", "from ..kit import number\n")
    assert sorted(violations(tmp_path)) == [
        "kafkamodel.sim.controller.leak imports kafkamodel.config.versions",
        "kafkamodel.studies.leak imports the kit's module kafkamodel.kit.present, not the kit's public names"]


def test_a_planted_cycle_is_found(tmp_path):
    _plant(tmp_path, "kafkamodel.durability.estimate", "def run():\n    from .sweep import run_detailed\n")
    _plant(tmp_path, "kafkamodel.durability.sweep", "from .estimate import run\n")
    assert cycles(import_graph(tmp_path)) == [["kafkamodel.durability.estimate", "kafkamodel.durability.sweep"]]


@pytest.mark.parametrize("module, target, names, broken", [
    ("kafkamodel.config.settings", "kafkamodel.sim.protocol", ["NONE"], True),
    ("kafkamodel.sim.engine.kernel", "kafkamodel.sim.broker.leader", ["LeaderRole"], True),
    ("kafkamodel.sim.broker.leader", "kafkamodel.kit.point", ["run_point"], True),
    ("kafkamodel.sim.broker.leader", "kafkamodel.config.settings", ["ACKS_ALL"], False),
    ("kafkamodel.sim.faults", "kafkamodel.config.schema", ["CONSUMER_FAULTS"], True),
    ("kafkamodel.sim.simulation", "kafkamodel.config.versions", ["mechanisms"], True),
    ("kafkamodel.sim.controller.replication", "kafkamodel.config.versions", ["at_least"], True),
    ("kafkamodel.sim.broker.replica_manager", "kafkamodel.config.schema", ["SECTIONS"], True),
    ("kafkamodel.sim.controller.replication", "kafkamodel.config.settings", ["Settings"], False),
    ("kafkamodel.sim.controller.replication", "kafkamodel.config.settings", ["Settings"], False),
    ("kafkamodel.campaign.spec", "kafkamodel.kit", ["_points"], True),
    ("kafkamodel.campaign.spec", "kafkamodel.kit", ["Spec", "point_of"], False),
    ("kafkamodel.validation.report", "kafkamodel.kit.present", ["number"], True),
    ("kafkamodel.durability.sweep", "kafkamodel.kit.sweep", ["run_sweeps"], True),
    ("kafkamodel.studies.zones", "kafkamodel.kit.plots", ["bars"], False),
    ("kafkamodel.studies.zones", "kafkamodel.kit", ["plots"], False),
    ("kafkamodel.kit.sweep", "kafkamodel.campaign.spec", ["Campaign"], True),
    ("kafkamodel.kit.report", "kafkamodel.studies.common", ["spread"], True),
    ("kafkamodel.kit.report", "kafkamodel", ["__version__"], False),
    ("kafkamodel.kit.report", "kafkamodel.validation.report", ["html_page"], True),
    ("kafkamodel.campaign.command", "kafkamodel.durability.command", ["run_durability"], True),
    # a command module may import what the verbs share; the model itself may not, nor may the shared module
    # import a command module (it would sit above the verbs it serves)
    ("kafkamodel.sim.command", "kafkamodel.command", ["load_named"], False),
    ("kafkamodel.sim.command", "kafkamodel.config.versions", ["canonical"], False),
    ("kafkamodel.sim.broker.leader", "kafkamodel.command", ["UsageError"], True),
    ("kafkamodel.kit.sweep", "kafkamodel.command", ["positive_int"], True),
    ("kafkamodel.command", "kafkamodel.kit.command", ["keep_option"], True),
    ("kafkamodel.sim.command", "kafkamodel.kit.command", ["run_study"], True),
])
def test_the_rule_catches_a_wrong_import(module, target, names, broken):
    assert bool(check(module, target, names)) == broken


def test_every_package_has_its_init():
    """setuptools finds packages by their __init__.py: a folder of modules without one would be left out of the wheel."""
    missing = [str(d.relative_to(PACKAGE.parent)) for d in PACKAGE.rglob("*")
               if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")) and not (d / "__init__.py").exists()]
    assert missing == []


def test_no_test_imports_another_test_and_helpers_import_one_way():
    """What several test files share lives in a helper module under tests/ (helpers.py, shipped.py, ...), imported
    by its name: no test file imports a test file, nor a helper as ``tests.NAME``."""
    found = []
    for path in sorted((PACKAGE.parent / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.name} imports {n}" for n in names
                      if n.split(".")[-1].startswith("test_") or n.split(".")[0] == "tests"]
    assert found == []
