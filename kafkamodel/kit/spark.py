"""The one place a Spark session is built (whoever starts it stops it).

Local mode by default (``local[*]``); ``master`` takes any Spark master URL.
Settings from docs/toolchain.md: no UI or console progress, two shuffle
partitions, 1 GiB driver, UTC, Arrow on without fallback, JVM logging at
error level (``log4j2.properties`` beside this file), ``SPARK_LOCAL_IP`` on
the loopback.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

from .spec import StudyError

LOG4J = Path(__file__).with_name("log4j2.properties")
DEFAULT_MASTER = "local[*]"
_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|(spark|mesos|k8s)://\S+|yarn)$")

SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",  # run_id=... partitions: strings
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J}",
    "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J}",
}


def check_master(master: str | None) -> str:
    master = DEFAULT_MASTER if master is None else master
    if not isinstance(master, str) or not _MASTER.match(master):
        raise StudyError([f"--master: must be a Spark master URL (local[*], local[2], spark://host:7077, yarn, k8s://...), got {master!r}"])
    return master


def check_java() -> None:
    home = os.environ.get("JAVA_HOME")
    if home and not (Path(home) / "bin" / "java").exists():
        raise StudyError([f"JAVA_HOME: {home} has no bin/java; point it at a Java 17+ install or unset it"])
    if not home and shutil.which("java") is None:
        raise StudyError(["java: not found; Spark needs Java 17+ (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
                          "conda: conda install openjdk=17)"])


def build_spark(master: str | None = None, app_name: str = "kafkamodel"):
    """A SparkSession with the kit's settings; the caller stops it (or use ``spark_session``)."""
    master = check_master(master)
    check_java()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in SETTINGS.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def spark_session(master: str | None = None, app_name: str = "kafkamodel"):
    """Build a session, yield it, stop it."""
    spark = build_spark(master, app_name)
    try:
        yield spark
    finally:
        spark.stop()
