"""Kafka's message format sizes, written out here from Kafka's definitions (not from the model's code).

DefaultRecord.sizeInBytes (magic v2): a varint of the body's length, then the body: attributes (1 byte),
timestampDelta (zigzag varlong), offsetDelta (zigzag varint), key length (varint; -1 for a null key) and key bytes,
value length (varint) and value bytes, header count (varint 0). DefaultRecordBatch.RECORD_BATCH_OVERHEAD = 61.
LegacyRecord (magic v0/v1): Records.LOG_OVERHEAD 12 (offset 8, size 4) + crc 4 + magic 1 + attributes 1
(+ timestamp 8 in v1) + key length 4 + key + value length 4 + value.
"""


def varint(value: int) -> int:
    """ByteUtils.sizeOfVarint: zigzag, then 7 bits per byte."""
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 128:
        zigzag >>= 7
        size += 1
    return size


def v2_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: int) -> int:
    key_part = varint(-1) if key is None else varint(len(key)) + len(key)
    body = 1 + varint(timestamp_delta) + varint(offset_delta) + key_part + varint(value) + value + varint(0)
    return varint(body) + body


def v2_batch(records: int, value: int, keys=None, timestamp_deltas=None) -> int:
    """A RecordBatch of `records` records of `value` bytes (null keys unless `keys` gives each one's bytes)."""
    return 61 + sum(v2_record(i, timestamp_deltas[i] if timestamp_deltas else 0, keys[i] if keys else None, value)
                    for i in range(records))


def legacy_record(magic: int, key: bytes | None, value: int) -> int:
    return 12 + 4 + 1 + 1 + (8 if magic == 1 else 0) + 4 + (len(key) if key else 0) + 4 + value


def v2_capacity(batch_size: int, value: int) -> int:
    """Records of `value` bytes (null keys) a batch takes: MemoryRecordsBuilder.hasRoomFor lets the first in, then
    each while the batch so far plus it fits in batch.size."""
    n = 1
    while v2_batch(n + 1, value) <= batch_size:
        n += 1
    return n
