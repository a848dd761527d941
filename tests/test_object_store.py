"""Sweeps, aggregation and a campaign with their runs in an object store: ``--runs s3a://bucket/...``.

The object store is moto's S3 server on the loopback; Spark reaches it through Hadoop's S3A filesystem
(``hadoop-aws``), as it would reach Amazon S3 or MinIO. An object store has no folders and no atomic rename:
the kit's driver goes through Hadoop's FileSystem API only (``kit.dataset.Storage``), and this checks it.

PySpark ships no ``hadoop-aws``, and Maven Central is out of reach here, so the jars come from a PyPI package
that carries them (``sagemaker-pyspark==1.4.5``: ``hadoop-aws-3.3.1.jar`` and
``aws-java-sdk-bundle-1.11.901.jar``); ``.ci/run`` fetches them and names their folder in
``KAFKAMODEL_S3A_JARS``. Without it the test is skipped, unless ``KAFKAMODEL_REQUIRE_S3A=1`` (CI) fails it.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kafkamodel.paths import ROOT
from kafkamodel.kit.point import execute_point
from kafkamodel.kit.specfile import load_spec
from helpers import ENGINES_SPEC, campaign_spec_file

pytestmark = [pytest.mark.slow, pytest.mark.spark]

BUCKET = "kafkamodel"
# hadoop-aws 3.3.1 reads these as plain numbers; the Hadoop 3.5 client PySpark ships defaults them with units
# ("60s", "64M"), which 3.3.1 cannot parse. The values are Hadoop 3.3's own defaults.
NUMERIC = {
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.connection.establish.timeout": "5000",
    "fs.s3a.connection.ttl": "300000",
    "fs.s3a.connection.request.timeout": "0",
    "fs.s3a.connection.idle.time": "60000",
    "fs.s3a.connection.acquisition.timeout": "60000",
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.multipart.purge.age": "86400",
    "fs.s3a.multipart.size": "67108864",
    "fs.s3a.multipart.threshold": "134217728",
    "fs.s3a.block.size": "33554432",
    "fs.s3a.readahead.range": "65536",
    "fs.s3a.retry.interval": "500",
    "fs.s3a.retry.throttle.interval": "100",
    "fs.s3a.executor.capacity": "16",
}


def _jars() -> list[Path]:
    folder = os.environ.get("KAFKAMODEL_S3A_JARS")
    jars = sorted(Path(folder).glob("*.jar")) if folder else []
    names = " ".join(j.name for j in jars)
    if "hadoop-aws-" in names and "aws-java-sdk-bundle-" in names:
        return jars
    why = "KAFKAMODEL_S3A_JARS names no folder with hadoop-aws and aws-java-sdk-bundle jars (.ci/run fetches them)"
    if os.environ.get("KAFKAMODEL_REQUIRE_S3A") == "1":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture
def s3(tmp_path):
    """moto's S3 server on the loopback with one bucket, and a Spark configuration folder that reaches it."""
    jars = _jars()
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                              region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        conf = tmp_path / "spark-conf"
        conf.mkdir()
        settings = {
            "spark.jars": ",".join(str(j) for j in jars),
            "spark.hadoop.fs.s3a.endpoint": endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "spark.hadoop.fs.s3a.access.key": "test",
            "spark.hadoop.fs.s3a.secret.key": "test",
            **{f"spark.hadoop.{key}": value for key, value in NUMERIC.items()},
        }
        (conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
        yield client, conf
    finally:
        server.stop()


def _python(conf: Path, *args: str) -> subprocess.CompletedProcess:
    """This Python with Spark configured by `conf` (spark-defaults.conf), as a user configures it."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, env={**os.environ, "SPARK_CONF_DIR": str(conf)},
                          capture_output=True, text=True, timeout=600)


def _keys(client, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _run_id(key: str) -> str:
    """The run a key of a partitioned table belongs to (``.../run_id=<id>/part-...``)."""
    return key.split("run_id=", 1)[1].split("/", 1)[0]


def _table(client, prefix: str) -> pd.DataFrame:
    """A partitioned Parquet table in the bucket, read with boto3 (not with the kit, not with Spark)."""
    frames = []
    for key in _keys(client, prefix):
        if key.endswith(".parquet"):
            frame = pd.read_parquet(io.BytesIO(client.get_object(Bucket=BUCKET, Key=key)["Body"].read()))
            frames.append(frame.assign(run_id=_run_id(key)))
    return pd.concat(frames, ignore_index=True)


def test_a_sweep_its_aggregation_and_a_campaign_keep_their_runs_in_an_object_store(s3, tmp_path):
    client, conf = s3
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "engines.yaml").write_text(ENGINES_SPEC)
    spec = load_spec(tmp_path / "spec" / "engines.yaml")
    runs = f"s3a://{BUCKET}/kafkamodel/runs"  # two levels that do not exist yet: made by the kit, not the root

    sweep = ("-m", "kafkamodel", "sweep", str(tmp_path / "spec" / "engines.yaml"), "--engine", "spark",
             "--master", "local[2]", "--runs", runs, "--timeout", "120")
    done = _python(conf, *sweep)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "engines: 4 points: 4 ran, 0 already done, 0 failed" in done.stdout
    resumed = _python(conf, *sweep)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "engines: 4 points: 0 ran, 4 already done, 0 failed" in resumed.stdout  # found by listing the bucket

    # what is in the bucket, read without the kit: a summary partition per run, and the summary.json text a run
    # executed here in a run folder holds, byte for byte
    summaries = {_run_id(k) for k in _keys(client, "kafkamodel/runs/engines/summary/")}
    assert summaries == {p.run_id for p in spec.points()}
    files = _table(client, "kafkamodel/runs/engines/files/").set_index("run_id")
    for point in spec.points():
        folder = tmp_path / "local" / point.run_id
        execute_point(point, folder)
        assert files.loc[point.run_id, "summary_json"] == (folder / "summary.json").read_text()
    assert not _keys(client, "kafkamodel/runs/engines/_failed/")
    assert not [k for k in _keys(client, "kafkamodel/") if "kafkamodel-probe" in k]  # the write check cleaned up

    aggregated = _python(conf, "-c", "import sys; from pathlib import Path; from kafkamodel.kit.aggregate import "
                         "aggregate; print(aggregate(sys.argv[1], master='local[2]', runs=sys.argv[2], "
                         "processed=Path(sys.argv[3])).line())", str(tmp_path / "spec" / "engines.yaml"), runs,
                         str(tmp_path / "processed"))
    assert aggregated.returncode == 0, aggregated.stderr[-3000:]
    assert "engines: 4 runs -> 2 configurations" in aggregated.stdout
    stats = pd.read_parquet(tmp_path / "processed" / "engines" / "stats")
    acked = stats[stats["measure"] == "records_acked"].set_index("config_id")
    assert sorted(acked.index) == sorted({p.config_id for p in spec.points()}) and set(acked["n"]) == {2}
    summary = _table(client, "kafkamodel/runs/engines/summary/")
    for config_id, row in acked.iterrows():  # the mean the aggregation computed, against the runs' own rows
        ids = {p.run_id for p in spec.points() if p.config_id == config_id}
        assert row["mean"] == pytest.approx(summary[summary["run_id"].isin(ids)]["records_acked"].mean())

    # the fault campaign: one schedule per setting, its runs in the bucket, its verdicts read back from there; the
    # same verdicts as the same schedules run here on papermill into run folders
    safety = campaign_spec_file(tmp_path)
    script = ("import sys; from pathlib import Path; from kafkamodel.campaign.command import run_campaign; "
              "out = run_campaign(Path(sys.argv[1]), schedules=1, engine=sys.argv[2], master='local[2]', "
              "runs=sys.argv[3] if '://' in sys.argv[3] else Path(sys.argv[3]), processed=Path(sys.argv[4]), "
              "report=False, progress=False, say=lambda line: None); print(chr(10).join(out.lines()))")
    verdicts = {}
    for engine, where in (("spark", f"s3a://{BUCKET}/campaign"), ("papermill", str(tmp_path / "campaign-runs"))):
        done = _python(conf, "-c", script, str(safety), engine, where, str(tmp_path / f"processed-{engine}"))
        assert done.returncode == 0, done.stderr[-3000:]
        assert "1 schedules x 4 settings = 4 runs: 4 ran, 0 already done, 0 failed" in done.stdout, done.stdout
        verdicts[engine] = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    # a verdict per setting (an unsafe setting's break adds its counterexample's line), the same on both engines
    settings = [line.split()[0] for line in verdicts["spark"] if not line.startswith("  counterexample:")]
    assert settings == ["isr_safe", "quorum_fsync", "isr_acks1", "isr_unclean"]
    assert verdicts["spark"] == verdicts["papermill"]
    folders = (tmp_path / "campaign-runs" / "campaigns" / "safety").iterdir()
    assert {_run_id(k) for k in _keys(client, "campaign/campaigns/safety/summary/")} == \
        {d.name for d in folders if not d.name.startswith((".", "_"))}
