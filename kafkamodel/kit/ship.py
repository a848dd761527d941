"""Shipping the package to Spark executors: ``dist/kafkamodel-<version>+<hash>.zip`` for ``--py-files``.

The zip holds the ``kafkamodel`` package exactly as the driver imports it
(every ``.py`` file and the package data), built reproducibly (sorted
entries, fixed timestamps) and named after a hash of its content, so an
executor never runs code other than the driver's and a changed source is a
new file. ``make dist`` builds it (and a wheel, for installing into a
cluster's Python environment); the Spark engine builds it when it is missing
and adds it with ``SparkContext.addPyFile``.

``python -m kafkamodel.kit.ship [DEST]`` prints the zip's path.
"""

from __future__ import annotations

import hashlib
import io
import sys
import uuid
import zipfile
from pathlib import Path

import kafkamodel

from ..paths import DIST

PACKAGE = Path(kafkamodel.__file__).resolve().parent
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def _package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))


def _zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in _package_files():
            info = zipfile.ZipInfo(str(Path("kafkamodel") / path.relative_to(PACKAGE)), _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def pyfiles(dest: Path | None = None) -> Path:
    """The package as a --py-files zip in `dest` (default dist/), written only if not already there."""
    dest = Path(dest) if dest is not None else DIST
    data = _zip_bytes()
    path = dest / f"kafkamodel-{kafkamodel.__version__}+{hashlib.sha256(data).hexdigest()[:12]}.zip"
    if not path.is_file():
        dest.mkdir(parents=True, exist_ok=True)
        tmp = dest / f".{path.name}.{uuid.uuid4().hex[:8]}"
        tmp.write_bytes(data)
        tmp.rename(path)
        for old in dest.glob(f"kafkamodel-{kafkamodel.__version__}+*.zip"):  # earlier builds
            if old != path:
                old.unlink(missing_ok=True)
    return path


def ship(sc, dest: Path | None = None) -> Path:
    """Add the package zip to a SparkContext's --py-files (once per context)."""
    path = pyfiles(dest)
    if not any(Path(f).name == path.name for f in sc.listFiles):
        driver_path = list(sys.path)
        sc.addPyFile(str(path))
        # pyspark also puts the zip on the driver's sys.path; the driver (and the processes it spawns,
        # which inherit sys.path) keep importing the sources they started from
        sys.path[:] = driver_path
    return path


if __name__ == "__main__":
    print(pyfiles(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
