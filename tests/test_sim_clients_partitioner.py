"""Kafka's murmur2 and default partitioner, bit for bit.

Reference values: Kafka's own ``UtilsTest.testMurmur2`` vectors, and
kafka-python's independent port of ``Utils.murmur2`` (which returns the
hash as an unsigned 32-bit int; Java's is signed).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kafkamodel.sim.clients.partitioner import key_strings, murmur2, murmur2_keys, partition_for_keys

with warnings.catch_warnings():  # kafka-python's import uses deprecated importlib.resources calls
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.partitioner.default as kafka_default  # kafka-python, a test dependency


def kp_murmur2(data: bytes) -> int:
    """kafka-python's murmur2, as Java's signed 32-bit int."""
    h = kafka_default.murmur2(data)
    assert 0 <= h <= 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kp_partition(key: bytes, partitions: int) -> int:
    """Kafka's default partition for a keyed record: toPositive(murmur2) % P."""
    return (kafka_default.murmur2(key) & 0x7FFFFFFF) % partitions


# org.apache.kafka.common.utils.UtilsTest.testMurmur2
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_kafka_facts_vector():
    assert murmur2(b"21") == -973932308


@pytest.mark.parametrize("data, expected", list(KAFKA_VECTORS.items()), ids=[k.decode() for k in KAFKA_VECTORS])
def test_kafka_utils_test_vectors(data, expected):
    assert murmur2(data) == expected
    assert kp_murmur2(data) == expected  # the reference agrees with Kafka too


def test_scalar_returns_signed_32_bit():
    values = [murmur2(bytes([i]) * n) for i in range(0, 256, 7) for n in range(6)]
    assert all(-(2**31) <= v < 2**31 for v in values)
    assert any(v < 0 for v in values) and any(v >= 0 for v in values)


def test_scalar_matches_kafka_python_on_random_bytes():
    rng = np.random.default_rng(20240601)
    cases = [b""] + [bytes(range(n)) for n in range(1, 41)] + [b"\xff" * n for n in range(41)]
    for _ in range(3000):
        n = int(rng.integers(0, 41))
        cases.append(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    mismatches = [c for c in cases if murmur2(c) != kp_murmur2(c)]
    assert not mismatches, mismatches[:5]


def test_scalar_matches_kafka_python_on_utf8_keys():
    for key in ["", "é", "ключ", "鍵-42", "🔑", "key-0", "key-12345"]:
        data = key.encode("utf-8")
        assert murmur2(data) == kp_murmur2(data), key


def test_key_strings():
    assert key_strings(np.array([0, 7, 123456789012])) == ["key-0", "key-7", "key-123456789012"]


def _key_indices() -> np.ndarray:
    rng = np.random.default_rng(7)
    large = np.concatenate([
        rng.integers(20001, 10**6, 300),
        rng.integers(10**6, 10**12, 300),
        rng.integers(10**12, 2**63 - 1, 300, dtype=np.int64),
        [10**k for k in range(19)], [10**k - 1 for k in range(1, 19)], [2**31 - 1, 2**31, 2**32, 2**63 - 1],
    ]).astype(np.int64)
    return np.concatenate([np.arange(20001, dtype=np.int64), large])


def test_vectorised_matches_kafka_python():
    indices = _key_indices()
    ours = murmur2_keys(indices)
    assert ours.dtype == np.int64 and ours.shape == indices.shape
    expected = np.array([kafka_default.murmur2(f"key-{i}".encode()) & 0x7FFFFFFF for i in indices.tolist()])
    bad = np.nonzero(ours != expected)[0]
    assert not len(bad), [(int(indices[i]), int(ours[i]), int(expected[i])) for i in bad[:5]]


def test_vectorised_matches_scalar_in_any_order():
    rng = np.random.default_rng(3)
    indices = rng.permutation(_key_indices())[:3000]  # mixed lengths, unsorted, with repeats below
    indices = np.concatenate([indices, indices[:100]])
    expected = [murmur2(f"key-{i}".encode()) & 0x7FFFFFFF for i in indices.tolist()]
    assert murmur2_keys(indices).tolist() == expected
    assert murmur2_keys(indices.tolist()).tolist() == expected  # a plain list works too


def test_vectorised_empty_and_single():
    assert murmur2_keys(np.array([], dtype=np.int64)).shape == (0,)
    assert murmur2_keys(np.array([5])).tolist() == [kafka_default.murmur2(b"key-5") & 0x7FFFFFFF]


@pytest.mark.parametrize("partitions", [1, 2, 3, 6, 7, 12, 50, 100, 1000])
def test_partition_for_keys_matches_kafka_python(partitions):
    rng = np.random.default_rng(partitions)
    key_index = np.concatenate([
        rng.integers(0, 5000, 4000),
        rng.integers(0, 2**63 - 1, 200, dtype=np.int64),
    ]).astype(np.int64)
    got = partition_for_keys(key_index, partitions)
    assert got.dtype == np.int32 and got.shape == key_index.shape
    expected = np.array([kp_partition(f"key-{i}".encode(), partitions) for i in key_index.tolist()])
    assert np.array_equal(got, expected)
    assert got.min() >= 0 and got.max() < partitions


@pytest.mark.parametrize("partitions", [1, 6, 1000])
def test_partition_for_keys_of_a_small_cardinality_hashes_each_key_once_and_matches_kafka_python(partitions):
    """Key indexes within a few times the records' count (a scenario's cardinality) are hashed once each, found by
    their index: the partitions Kafka's partitioner gives, as with wide indexes (the test above)."""
    rng = np.random.default_rng(partitions)
    key_index = np.concatenate([rng.integers(0, 3000, 4000), [0, 2999, 9, 10, 99, 100]]).astype(np.int64)
    got = partition_for_keys(key_index, partitions)
    assert got.dtype == np.int32 and got.shape == key_index.shape
    expected = np.array([kp_partition(f"key-{i}".encode(), partitions) for i in key_index.tolist()])
    assert np.array_equal(got, expected)
    assert partition_for_keys(np.empty(0, dtype=np.int64), partitions).shape == (0,)


def test_partition_of_a_kafka_vector():
    # toPositive(-790332482) = 1357151166, and 1357151166 % 50 = 16
    assert (murmur2(b"foobar") & 0x7FFFFFFF) == 1357151166
    assert kp_partition(b"foobar", 50) == 16


def test_partition_spread_is_roughly_uniform():
    counts = np.bincount(partition_for_keys(np.arange(60000), 6), minlength=6)
    assert counts.min() > 9000 and counts.max() < 11000
