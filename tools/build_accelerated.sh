#!/usr/bin/env bash
# Build the optional mypyc accelerator (issue 39; docs/speed.md, "mypyc, measured"): the model's hot modules
# compiled by mypyc from the unchanged source, into a separate tree that runs like a checkout. The interpreted
# package is not touched and stays the reference: the accelerated tree must give the same numbers
# (tests/test_accelerated.py runs the snapshot with it).
#
#   tools/build_accelerated.sh [OUT]      (default OUT: build/accelerated; `make accelerate`)
#   cd build/accelerated && ../../.venv/bin/python -m kafkamodel bench      (run from OUT: a command run from
#   the repository's top imports the interpreted package first)
#   .venv/bin/python build/accelerated/tests/snapshot.py --workers 2         (the snapshot, compiled)
#
# mypy (which carries mypyc) is installed into its own virtual environment (.cache/mypyc-venv), made from the
# interpreter that will import the build (PYTHON, default .venv/bin/python: the extension modules are built
# for its version): it is a build tool, never a dependency of the model. Takes about a minute on two cores.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/build/accelerated}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
MYPY_VERSION=2.4.1
TOOLS=$ROOT/.cache/mypyc-venv

# the modules the event loop spends its time in (a profile of the bench cases and of the production case)
MODULES="engine/kernel.py engine/transport.py state.py batches.py
         broker/server.py broker/produce.py broker/leader.py broker/follower.py broker/sessions.py broker/fetcher.py
         broker/cpu.py storage/log.py storage/disk.py storage/producer_state.py rules/modes.py
         clients/producer.py clients/accumulator.py"

# mypy's static complaints mypyc need not stop on: an Optional attribute or argument used where the code knows it is
# set, an attribute read on a value mypy can only type as object, and unannotated empty containers (mypyc checks such values at run time, where a wrong one raises TypeError:
# the snapshot would fail). Modules outside the set are read for their types only.
FLAGS="--follow-imports=silent --ignore-missing-imports --disable-error-code annotation-unchecked
       --disable-error-code union-attr --disable-error-code index --disable-error-code arg-type
       --disable-error-code type-var --disable-error-code call-overload --disable-error-code var-annotated
       --disable-error-code operator --disable-error-code attr-defined"

if [ ! -x "$PYTHON" ]; then
    echo "build_accelerated: PYTHON=$PYTHON is not an executable interpreter (make the venv first: make test)" >&2
    exit 2
fi
if [ ! -x "$TOOLS/bin/mypyc" ] || [ "$("$TOOLS/bin/python" -m mypy --version | cut -d' ' -f2)" != "$MYPY_VERSION" ]; then
    rm -rf "$TOOLS"
    "$PYTHON" -m venv "$TOOLS"
    "$TOOLS/bin/python" -m pip install --quiet "mypy==$MYPY_VERSION" setuptools
fi

# built beside OUT and moved into place at the end: a failed build leaves nothing half-written at OUT
TMP="$OUT.tmp"
rm -rf "$TMP"
mkdir -p "$TMP/tests"
cp -R "$ROOT/kafkamodel" "$TMP/kafkamodel"
find "$TMP/kafkamodel" -name __pycache__ -prune -exec rm -rf {} +
cp "$ROOT/pyproject.toml" "$TMP/"  # with data/ beside it, kafkamodel.paths takes the tree for a checkout
ln -s "$ROOT/data" "$TMP/data"
ln -s "$ROOT/notebooks" "$TMP/notebooks"
cp "$ROOT/tests/snapshot.py" "$TMP/tests/"
ln -s "$ROOT/tests/snapshots" "$TMP/tests/snapshots"
SOURCES=""
for m in $MODULES; do SOURCES="$SOURCES kafkamodel/sim/$m"; done
# shellcheck disable=SC2086
(cd "$TMP" && "$TOOLS/bin/mypyc" $FLAGS $SOURCES >"$TMP/build.log" 2>&1) || {
    echo "build_accelerated: mypyc failed (its output: $TMP/build.log)" >&2
    tail -20 "$TMP/build.log" >&2
    exit 1
}
rm -rf "$TMP/build"
(cd "$TMP" && "$PYTHON" -c "import kafkamodel.sim.engine.kernel as k; assert k.__file__.endswith('.so'), k.__file__")
rm -rf "$OUT"
mv "$TMP" "$OUT"
echo "build_accelerated: $(ls "$OUT"/kafkamodel/sim/*/*.so "$OUT"/kafkamodel/sim/*.so | wc -l) modules compiled into $OUT"
