"""Kafka's partitioners.

``murmur2`` is Kafka's ``Utils.murmur2`` (seed 0x9747b28c), bit for bit, for
one key and vectorised over many keys of equal length. A keyed record goes to
``(murmur2(key) & 0x7fffffff) % partitions``.
"""

from __future__ import annotations

import numpy as np

SEED = 0x9747B28C
M = 0x5BD1E995
MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of a byte string, as a signed 32-bit int (like Java)."""
    length = len(data)
    h = (SEED ^ length) & MASK
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * M) & MASK
        k ^= k >> 24
        k = (k * M) & MASK
        h = (h * M) & MASK
        h ^= k
    tail = data[4 * n4 :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * M) & MASK
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _murmur2_same_length(block: np.ndarray) -> np.ndarray:
    """murmur2 of each row of a (n, L) uint8 array, as uint32."""
    n, length = block.shape
    with np.errstate(over="ignore"):
        m = np.uint32(M)
        h = np.full(n, (SEED ^ length) & MASK, dtype=np.uint32)
        n4 = length // 4
        if n4:
            words = np.ascontiguousarray(block[:, : 4 * n4]).view("<u4").astype(np.uint32)
            for i in range(n4):
                k = words[:, i] * m
                k ^= k >> np.uint32(24)
                k *= m
                h *= m
                h ^= k
        tail = block[:, 4 * n4 :].astype(np.uint32)
        rem = tail.shape[1]
        if rem >= 3:
            h ^= tail[:, 2] << np.uint32(16)
        if rem >= 2:
            h ^= tail[:, 1] << np.uint32(8)
        if rem >= 1:
            h ^= tail[:, 0]
            h *= m
        h ^= h >> np.uint32(13)
        h *= m
        h ^= h >> np.uint32(15)
    return h


def key_strings(indices: np.ndarray) -> list[str]:
    """The scenario's key names: key-<i>."""
    return [f"key-{i}" for i in indices.tolist()]


def murmur2_keys(indices: np.ndarray) -> np.ndarray:
    """Positive murmur2 (``& 0x7fffffff``) of the keys key-<i> for each index."""
    indices = np.asarray(indices, dtype=np.int64)
    out = np.empty(len(indices), dtype=np.int64)
    if not len(indices):
        return out
    digits = np.char.str_len(indices.astype(str)) if len(indices) else indices
    for d in np.unique(digits):
        rows = np.nonzero(digits == d)[0]
        text = np.array([f"key-{i}" for i in indices[rows].tolist()], dtype=f"S{4 + int(d)}")
        block = text.view(np.uint8).reshape(len(rows), 4 + int(d))
        out[rows] = (_murmur2_same_length(block) & np.uint32(0x7FFFFFFF)).astype(np.int64)
    return out


def partition_for_keys(key_index: np.ndarray, partitions: int) -> np.ndarray:
    """Kafka's default partition of each keyed record (key_index >= 0)."""
    if not len(key_index):
        return np.empty(0, dtype=np.int32)
    top = int(key_index.max())
    if top < 4 * len(key_index) + 65536:  # each key present hashed once, found by its index (no sort)
        present = np.zeros(top + 1, dtype=bool)
        present[key_index] = True
        unique = np.flatnonzero(present)
        of_key = np.zeros(top + 1, dtype=np.int32)
        of_key[unique] = murmur2_keys(unique) % partitions
        return of_key[key_index]
    unique, inverse = np.unique(key_index, return_inverse=True)
    return (murmur2_keys(unique) % partitions)[inverse].astype(np.int32)
