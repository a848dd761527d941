"""A sweep's runs as a dataset at a URI: what the Spark engine writes when ``--runs`` is a URI.

``--runs file:///data/runs`` (or ``hdfs://namenode/runs``, ``s3a://bucket/runs``, any
filesystem Spark's Hadoop libraries write) puts a study's runs at
``<runs>/<study>/<table>/run_id=<run_id>/part-*.parquet``, one partitioned
Parquet dataset per table:

* ``summary``: one row per run, the columns of a run folder's
  ``summary.parquet`` (what aggregation reads);
* ``files``: one row per run, the text of its ``summary.json``,
  ``scenario.yaml`` and ``point.json`` (the same bytes a run folder holds);
* ``events``, ``timeline``, ``partitions``, ``groups`` and, where the point
  keeps it, ``records``: the rows of the run folder's Parquet files (a table
  with no rows has no partition).

Executors never share a folder with the driver: each task runs its points
and returns their tables as Arrow rows (``encode``: one row per point and
table, the table as compressed Arrow IPC); Spark writes them, and the driver
only lists, deletes and writes small files through Hadoop's FileSystem API
(``Storage``). Points run in chunks, one Spark job each, then each table is
written with dynamic partition overwrite (a point's partition is replaced
whole, others are untouched) and ``summary`` last: a run is finished when its
``summary`` partition exists, so a sweep killed mid-way keeps every chunk it
committed and the next one runs only the points without a summary.
A failed point is recorded as ``<runs>/<study>/_failed/<run_id>.json`` and
cleared when it succeeds.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from .spec import StudyError

TABLES = ("files", "events", "timeline", "partitions", "groups", "zones", "records", "summary")  # written in this order
FAILED = "_failed"
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
PARTITION = "run_id"
STATUS = ""  # the table name of a point's status row in the envelope


def is_uri(runs) -> bool:
    return isinstance(runs, str) and bool(URI.match(runs))


def check_uri(uri: str, flag: str = "--runs") -> str:
    """A runs URI, normalised (no trailing slash); ``file:`` URIs must name an absolute path (file:///...)."""
    scheme, rest = uri.split("://", 1)
    if scheme.lower() == "file" and not rest.startswith("/"):
        raise StudyError([f"{flag}: a file URI names an absolute path (file:///data/runs), got {uri!r}"])
    if not rest.strip("/"):
        raise StudyError([f"{flag}: the URI names no folder, got {uri!r}"])
    return uri.rstrip("/")


def table_uri(root: str, study: str, table: str) -> str:
    return f"{root}/{study}/{table}"


def local_path(uri: str):
    """The folder a ``file:`` URI names (the papermill engine writes the same dataset there itself)."""
    from pathlib import Path
    from urllib.parse import urlparse

    return Path(unquote(urlparse(uri).path))


def partition(study_dir, table: str, run_id: str):
    return study_dir / table / f"{PARTITION}={run_id}"


def is_finished_local(study_dir, run_id: str) -> bool:
    return partition(study_dir, "summary", run_id).is_dir()


def write_local(study_dir, run_id: str, tables: dict) -> None:
    """One point's tables (``point.point_tables``) into the dataset in the local folder `study_dir`, as Spark
    writes it: per table a partition folder ``run_id=<run_id>`` (its Parquet file without the run_id column,
    Spark's types), each published with one rename, the summary last."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..folders import hidden_sibling, swap_in

    for name in TABLES:
        if name not in tables:
            continue
        table = tables[name]
        schema = pa.schema([pa.field(f.name, spark_type(f.type)) for f in table.schema if f.name != PARTITION])
        final = partition(study_dir, name, run_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = hidden_sibling(final, "tmp")
        tmp.mkdir()
        pq.write_table(pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in schema], schema=schema),
                       tmp / "part-00000.parquet", compression="zstd")
        swap_in(tmp, final, replace=True)


class Storage:
    """The few file operations the driver does at a runs URI, through Hadoop's FileSystem (the filesystems Spark
    writes to: file, hdfs, s3a, ...)."""

    def __init__(self, spark, root: str):
        self.jvm = spark.sparkContext._jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.root = root
        try:
            self.fs = self._path(root).getFileSystem(self.conf)
        except Exception as exc:  # py4j's error carries the Java one: keep its message
            raise StudyError([f"--runs: Spark cannot write to {root!r}: {_java_message(exc)}"]) from None

    def _path(self, uri: str):
        return self.jvm.org.apache.hadoop.fs.Path(uri)

    def exists(self, uri: str) -> bool:
        return bool(self.fs.exists(self._path(uri)))

    def names(self, uri: str) -> list[str]:
        """The entries of a folder (none if it is missing)."""
        if not self.exists(uri):
            return []
        return [str(s.getPath().getName()) for s in self.fs.listStatus(self._path(uri))]

    def delete(self, uri: str) -> None:
        self.fs.delete(self._path(uri), True)

    def write_text(self, uri: str, text: str) -> None:
        """A small file, written whole under a hidden name, then renamed into place."""
        final = self._path(uri)
        tmp = self._path(f"{uri.rsplit('/', 1)[0]}/.{uri.rsplit('/', 1)[1]}.tmp")
        out = self.fs.create(tmp, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        if self.fs.exists(final):
            self.fs.delete(final, False)
        self.fs.rename(tmp, final)

    def read_text(self, uri: str) -> str:
        stream = self.fs.open(self._path(uri))
        try:
            reader = self.jvm.java.io.BufferedReader(self.jvm.java.io.InputStreamReader(stream, "UTF-8"))
            lines = []
            while (line := reader.readLine()) is not None:
                lines.append(line)
            return "\n".join(lines) + "\n"
        finally:
            stream.close()

    def check_writable(self, study_uris: list[str]) -> None:
        """Each study's folder can be made and written (a probe file, deleted); what the check made is removed."""
        made = []
        try:
            for uri in study_uris:
                missing, at = [], uri
                # stop below the filesystem's root (a bucket, a namenode), which is never made: S3A refuses
                # to look at s3a://bucket, a root without a path ("path must be absolute")
                while "/" in at.split("://", 1)[1].strip("/") and not self.exists(at):
                    missing.append(at)
                    at = at.rsplit("/", 1)[0]
                if missing:
                    made.append(missing[-1])
                self.fs.mkdirs(self._path(uri))
                probe = f"{uri}/.kafkamodel-probe"
                self.write_text(probe, "probe\n")
                self.delete(probe)
        except Exception as exc:
            for uri in made:
                try:
                    self.delete(uri)
                except Exception:
                    pass
            raise StudyError([f"--runs: Spark cannot write to {study_uris[0]!r}: {_java_message(exc)}"]) from None

    def finished(self, study: str) -> set[str]:
        """The run ids of a study with a committed ``summary`` partition."""
        prefix = f"{PARTITION}="
        return {unquote(n[len(prefix):]) for n in self.names(table_uri(self.root, study, "summary"))
                if n.startswith(prefix)}

    def record_failure(self, study: str, point: dict, error: str) -> None:
        self.write_text(f"{self.root}/{study}/{FAILED}/{point['run_id']}.json",
                        json.dumps({"run_id": point["run_id"], "error": error, "point": point}, indent=2,
                                   default=str) + "\n")

    def clear_failures(self, study: str, run_ids) -> None:
        folder = f"{self.root}/{study}/{FAILED}"
        present = set(self.names(folder))
        for run_id in run_ids:
            if f"{run_id}.json" in present:
                self.delete(f"{folder}/{run_id}.json")


def _java_message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    return " ".join(text.splitlines()[0].split())[:300]


# --- the envelope: a point's tables as Arrow rows of one fixed schema -----------------------------------

ENVELOPE = (("study", "string"), ("run_id", "string"), ("table", "string"), ("ok", "boolean"), ("error", "string"),
            ("model_s", "double"), ("write_s", "double"), ("schema", "binary"), ("data", "binary"))


def envelope_schema():
    import pyarrow as pa

    kinds = {"string": pa.string(), "boolean": pa.bool_(), "double": pa.float64(), "binary": pa.binary()}
    return pa.schema([(name, kinds[kind]) for name, kind in ENVELOPE])


def encode(study: str, run_id: str, tables: dict) -> list[dict]:
    """Envelope rows of one point's tables: the table as zstd-compressed Arrow IPC and its schema."""
    import pyarrow as pa

    rows = []
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    for name, table in tables.items():
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        rows.append({"study": study, "run_id": run_id, "table": name, "ok": True, "error": None, "model_s": None,
                     "write_s": None, "schema": table.schema.serialize().to_pybytes(),
                     "data": sink.getvalue().to_pybytes()})
    return rows


def spark_type(kind):
    """An Arrow type Spark's Parquet writer takes (dictionaries decoded, unsigned and null widened)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return spark_type(kind.value_type)
    if pa.types.is_null(kind):
        return pa.float64()
    if pa.types.is_unsigned_integer(kind):
        return pa.int64()
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_timestamp(kind) and kind.unit == "ns":
        return pa.timestamp("us", tz=kind.tz)
    return kind


def unified(schemas: list[bytes]):
    """One schema for the tables of many points (columns in first-seen order, types promoted, Spark's types)."""
    import pyarrow as pa

    read = [pa.ipc.read_schema(pa.py_buffer(s)) for s in schemas]
    merged = pa.unify_schemas(read, promote_options="permissive")
    return pa.schema([pa.field(f.name, spark_type(f.type)) for f in merged])


def decoder(schema_bytes: bytes):
    """The mapInArrow function turning envelope rows (``data``) into the table's rows, in `schema_bytes`'s schema."""
    def decode(batches):
        import pyarrow as pa

        schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes))
        for batch in batches:
            for data in batch.column("data").to_pylist():
                table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
                columns = [table.column(f.name).cast(f.type) if f.name in table.column_names
                           else pa.nulls(table.num_rows, f.type) for f in schema]
                yield from pa.Table.from_arrays(columns, schema=schema).to_batches()

    return decode
