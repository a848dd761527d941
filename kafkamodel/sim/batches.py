"""The producers' batches: one table, a column per field (struct of arrays), owned here; their size in bytes.

A batch is a contiguous range ``[lo, lo + count)`` of one producer's records
for one partition, made by the producer's accumulator when the sender drains
it (``accumulator``). Its identity and size never change; the producer
(``state``, ``attempt``, its acknowledgement time, ``error``, ``epoch``, ``seq``) and the
leaders (``visible_at``, when it became visible, which also says whether it is committed) fill in the rest. Each column is an
``array.array`` of the field's type: a cell of 1-8 bytes, where a Python
list would take an 8-byte slot and, for an int past 256 or a float of its
own, an object of 24-32 bytes (the batch table grows with the run: a
production-sized second makes a million batches). A column whose values
are mostly small (``attempt``, ``epoch``, ``seq``, ``bytes``) starts in the
narrowest type and ``Batches.widen`` makes it Kafka's type at the first value
that does not fit. The event loop touches one
cell at a time, which an array does about 20 ns slower than a list (NumPy
arrays slower still); a batch's cells are read a few times each, against the
tens of microseconds the rest of a batch costs.

A batch's ``bytes`` are what Kafka's message format makes of its records, on
the wire and on disk (``RecordFormat``): magic v2 (0.11+, KIP-98) a 61-byte
RecordBatch header and per record ``DefaultRecord.sizeInBytes`` (varints for
the body length, timestamp and offset deltas, key and value lengths);
magic v0 (0.8) and v1 (0.10, KIP-32) per record the 12-byte log overhead
(offset, size) and ``LegacyRecord``'s header (crc, magic, attributes, v1's
timestamp, key and value lengths). ``compression.type`` shrinks the records
(v2: the records section; v0/v1: the inner set, wrapped in one message) by
its codec's ratio (``CODECS``).
"""

from __future__ import annotations

import math
import mmap
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from .protocol import NONE, PENDING
from .storage.log import AppendTable, Instants, Log

RECORD_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (magic v2)
LOG_OVERHEAD = 12  # Records.LOG_OVERHEAD: offset (8) and size (4) before every v0/v1 message
LEGACY_RECORD_OVERHEAD = (14, 22)  # LegacyRecord.RECORD_OVERHEAD_V0 / _V1: crc 4, magic 1, attributes 1, (v1: timestamp
#                                    8), key length 4, value length 4
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05  # MemoryRecordsBuilder: a compressed batch's size is estimated this high
_TS_STEPS = (64, 8192, 1 << 20, 1 << 27)  # a non-negative delta's zigzag varint grows a byte at each of these


@dataclass(frozen=True)
class Codec:
    """A compression.type as the model charges it: the size ratio and the CPU speed of one core (MB = 10^6 bytes per
    second, as lzbench prints them), from lzbench 1.7.1 on the Silesia corpus (docs/calibration.md)."""

    name: str
    ratio: float  # uncompressed / compressed
    compress_mb_per_s: float
    decompress_mb_per_s: float


# lzbench 1.7.1 README (inikep/lzbench), Intel Core i5-4300U, one core, silesia.tar (211,947,520 bytes): the rows of the
# codecs Kafka's producer uses at their Kafka default level (gzip: java.util.zip's Deflater default, level 6; lz4:
# the fast compressor; zstd: level 3, for which the table's nearest row is -2)
CODECS = {
    "none": Codec("none", 1.0, math.inf, math.inf),
    "gzip": Codec("gzip", 211947520 / 68228431, 20.0, 267.0),  # zlib 1.2.11 -6
    "snappy": Codec("snappy", 211947520 / 102146767, 327.0, 1075.0),  # snappy 1.1.4
    "lz4": Codec("lz4", 211947520 / 100880800, 452.0, 2244.0),  # lz4 1.7.5
    "zstd": Codec("zstd", 211947520 / 70164775, 185.0, 587.0),  # zstd 1.1.4 -2
}


def compress_ms_per_byte(codec: str) -> float:
    """CPU ms one core spends compressing one (uncompressed) byte with the codec (0 for none)."""
    return 1e-3 / CODECS[codec].compress_mb_per_s


def decompress_ms_per_byte(codec: str) -> float:
    """CPU ms one core spends decompressing the codec's output, per uncompressed byte (0 for none): what a broker's
    LogValidator pays to check a compressed batch."""
    return 1e-3 / CODECS[codec].decompress_mb_per_s


def varint_size(value: int) -> int:
    """Bytes of ByteUtils.writeVarint(value): a zigzag-encoded varint."""
    z = 2 * value if value >= 0 else -2 * value - 1
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    """varint_size of each value (non-negative int64), in NumPy."""
    z = 2 * values
    return 1 + (z >= 1 << 7) + (z >= 1 << 14) + (z >= 1 << 21) + (z >= 1 << 28)


def _key_digits(keys: np.ndarray) -> np.ndarray:
    """Decimal digits of each key index (keys are the strings key-<i>, UTF-8)."""
    return np.searchsorted(_POW10, keys, side="right") + 1


_POW10 = np.array([10 ** i for i in range(1, 19)], dtype=np.int64)
DIGITS = np.int8  # a key array of this type holds each key's digits, not its index: all a record format reads of it
#                   (a run without a records table keeps only that: workload.build_workload)


def key_digits(keys: np.ndarray) -> np.ndarray:
    """Each key index's digits as the DIGITS array a record format reads instead of the indexes (-1: a null key)."""
    return np.where(keys < 0, -1, _key_digits(keys)).astype(DIGITS)
_FEW_KEYS = 16  # batches of at most this many keyed records count their key bytes in Python (NumPy's calls cost more)
_FEW_LOOKED_UP = 256  # a drain's batches with at most this many keys in all count them in Python when each key's
#                       digits are a lookup (held as digits, or a format's ``digits_of``): NumPy's calls cost more
_DIGITS_OF_MOST = 1 << 20  # a format looks its keys' digits up in a list (8 bytes a key of the cardinality) up to this


def _few_key_bytes(view: memoryview, lo: int, n: int, digits: bool) -> int:
    """The bytes records [lo, lo + n) add for their keys over null keys: 4 + the digits of i for key-<i> (`digits`:
    the keys are held as digits, ``DIGITS``); for a few keys (at most ``_FEW_KEYS``), read through a memoryview of
    the keys (a slice of it costs less than a NumPy slice's)."""
    ks = view[lo:lo + n].tolist()  # _key_digits, per key: the decimal digits of i (1 for 0, and for -1: str gives 2)
    if digits:
        return 4 * n + sum(ks)
    return 4 * n + sum(map(len, map(str, ks))) - ks.count(-1)


def _keys_bytes(keys: np.ndarray, los, ns, digits: bool = False, view: memoryview | None = None) -> list[int]:
    """``_few_key_bytes`` of each range [lo, lo + n) (`los`, `ns`): in Python for a few keys in all (`view`: a
    memoryview of `keys`, if made), else in NumPy at once."""
    if sum(ns) <= _FEW_KEYS:
        return list(map(_few_key_bytes, repeat(memoryview(keys) if view is None else view), los, ns, repeat(digits)))
    return _keys_bytes_array(keys, np.asarray(los, dtype=np.int64), np.asarray(ns, dtype=np.int64), digits).tolist()


def _keys_bytes_array(keys: np.ndarray, los: np.ndarray, counts: np.ndarray, digits: bool) -> np.ndarray:
    """``_few_key_bytes`` of each range [lo, lo + n) (int64 arrays `los`, `counts`, each n at least 1), in NumPy at
    once."""
    if len(counts) == int(counts.sum()):  # one record each (a drain of many partitions, the usual): no gather
        each = keys[los]
        return 4 + (each.astype(np.int64) if digits else _key_digits(each))
    ends = np.cumsum(counts)
    starts = ends - counts  # range i's keys in the gathered array: from where the earlier ones end
    index = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(los - starts, counts)
    each = keys[index].astype(np.int64) if digits else _key_digits(keys[index])
    return 4 * counts + np.add.reduceat(each, starts)


class RecordFormat:
    """One producer's records as Kafka's message format lays them out: a batch's bytes, and how many records
    batch.size holds."""

    __slots__ = ("magic", "value", "keyed", "codec", "ratio", "decompress_ms", "header", "static", "vbody", "per", "legacy", "times", "keys", "digits",
                 "view", "cardinality", "digits_of", "records_per_batch", "record_bytes", "record_size",
                 "max_batch_bytes")

    def __init__(self, magic: int, value: int, key_cardinality: int | None, codec: str, batch_size: int):
        self.magic = magic
        self.value = value  # record.size.bytes: the value's bytes
        self.keyed = key_cardinality is not None
        self.codec = codec  # compression.type
        self.ratio = CODECS[codec].ratio
        self.decompress_ms = decompress_ms_per_byte(codec)  # per uncompressed byte
        self.times: array | memoryview | None = None  # every record's time in the accumulator, for timestamp deltas (attach)
        self.keys: np.ndarray | None = None  # every record's key index (-1: null), or its digits (``DIGITS``)
        self.view: memoryview | None = None  # a memoryview of `keys` (a batch of a few keys reads them through it)
        self.digits = False  # `keys` holds the digits
        self.cardinality = key_cardinality
        # key index i -> the decimal digits of i, and the last entry 1 (read at -1: a null key counts 1, as
        # ``_few_key_bytes``): made when `keys` are indexes and the cardinality is at most _DIGITS_OF_MOST (``attach``)
        self.digits_of: list[int] | None = None
        if magic >= 2:
            self.header = RECORD_BATCH_OVERHEAD
            # attributes 1, null key length 1, value length, value, header count 1 (then + timestamp and offset
            # deltas, and a key's length and bytes beyond the null key's 1)
            self.static = 3 + varint_size(value) + value
            vb = varint_size(self.static + 2)
            self.vbody = vb if vb == varint_size(self.static + 2 + 8 + 24) else 0  # 0: it varies, count each record
            self.per = self.vbody + self.static + 2
            self.legacy = 0
        else:
            self.legacy = LOG_OVERHEAD + LEGACY_RECORD_OVERHEAD[magic]  # a null key has no bytes
            self.header = self.legacy if codec != "none" else 0  # a compressed set is one wrapper message
            self.per = self.legacy + value
            self.static = self.vbody = 0
        mean_key = 0.0
        if self.keyed:
            n = max(1, key_cardinality)
            mean_key = 4 + float(_key_digits(np.arange(n, dtype=np.int64)).mean())
        self.record_size = self.per + mean_key  # one record's bytes, uncompressed (what compression works through)
        self.records_per_batch = self._capacity(batch_size, mean_key)
        # buffer.memory per record: Kafka's BufferPool gives each batch batch.size (or one record's size, if larger)
        self.record_bytes = max(batch_size, self.header + self.per + mean_key) / self.records_per_batch
        # no batch is larger (``batch_bytes``, uncompressed: a codec only shrinks it): at most records_per_batch
        # records, each its `per` bytes and at most 64 more (a key's 4 + 19 digits, varints of a timestamp delta 10,
        # an offset delta 5 and a record's length 5)
        self.max_batch_bytes = self.header + self.records_per_batch * (self.per + 64)

    def _capacity(self, batch_size: int, key: float) -> int:
        """Records a batch takes before it is full (MemoryRecordsBuilder.hasRoomFor: the first always; then while
        the estimate so far plus the next record, uncompressed, fits in batch.size), timestamp deltas below 64 ms."""
        factor = 1.0 if self.ratio == 1.0 else COMPRESSION_RATE_ESTIMATION_FACTOR / self.ratio
        written, n = 0.0, 0
        while True:
            if self.magic >= 2:
                size = self.per + key + (varint_size(n) - 1)
            else:
                size = self.per + key
            if n and self.header + written * factor + size > batch_size:
                return n
            written += size
            n += 1

    def attach(self, times, keys) -> None:
        """The records' times in the accumulator (read as they are when a batch is cut) and key indexes."""
        self.times = times
        self.keys = keys
        self.view = memoryview(keys) if keys is not None else None
        self.digits = keys is not None and keys.dtype == DIGITS
        if keys is not None and not self.digits and self.digits_of is None and self.cardinality is not None \
                and self.cardinality <= _DIGITS_OF_MOST:
            self.digits_of = _key_digits(np.arange(max(1, self.cardinality), dtype=np.int64)).tolist() + [1]

    def key_bytes(self, lo: int, n: int) -> int:
        """``_few_key_bytes`` of the format's records [lo, lo + n) (one batch: ``keys_bytes`` without its lists)."""
        view = self.view
        if n <= _FEW_LOOKED_UP:
            if self.digits:
                return 4 * n + sum(view[lo:lo + n].tolist())
            digits_of = self.digits_of
            if digits_of is not None:
                return 4 * n + sum(map(digits_of.__getitem__, view[lo:lo + n].tolist()))
        if n <= _FEW_KEYS:
            return _few_key_bytes(view, lo, n, self.digits)
        return _keys_bytes(self.keys, (lo,), (n,), self.digits, view)[0]

    def keys_bytes(self, los, ns) -> list[int]:
        """``_few_key_bytes`` of each range [lo, lo + n) of the format's keys (`los`, `ns`): ``key_bytes`` per range
        while the keys are few in all and each one's digits a lookup, else ``_keys_bytes``."""
        if sum(ns) <= _FEW_LOOKED_UP and (self.digits or self.digits_of is not None):
            return list(map(self.key_bytes, los, ns))
        return _keys_bytes(self.keys, los, ns, self.digits, self.view)

    def batch_bytes(self, lo: int, n: int, keys: int | None = None) -> int:
        """Bytes of the batch of records [lo, lo + n) on the wire and on disk (`keys`: what its keys add, if known:
        ``keys_bytes``)."""
        if self.legacy:
            records = n * self.per
            if self.keyed:
                records += self.key_bytes(lo, n) if keys is None else keys
        elif not self.vbody:
            records = self._exact(lo, n)
        else:
            records = n * self.per
            if n > 64:
                records += (n - 64) + (n - 8192 if n > 8192 else 0) + (n - (1 << 20) if n > 1 << 20 else 0)
            times = self.times
            hi = lo + n
            first = math.floor(times[lo])
            last = times[hi - 1]
            for step in _TS_STEPS:  # timestamp deltas (ms, as Kafka's currentTimeMillis) of 64 ms and more: 2 bytes...
                if last < first + step:
                    break
                records += hi - bisect_left(times, first + step, lo, hi)
            if self.keyed:
                records += self.key_bytes(lo, n) if keys is None else keys
        if self.ratio != 1.0:
            records = math.ceil(records / self.ratio)
        return self.header + records

    def batches_bytes(self, los: list[int], ns: list[int]) -> list[int]:
        """``batch_bytes`` of each batch of records [lo, lo + n) (`los`, `ns`), their keys' bytes counted at once."""
        if self.keyed and (self.legacy or self.vbody):
            return list(map(self.batch_bytes, los, ns, self.keys_bytes(los, ns)))
        return list(map(self.batch_bytes, los, ns))

    def batches_bytes_array(self, los: list[int], ns: list[int]) -> np.ndarray:
        """``batches_bytes`` as an int64 array, in NumPy at once (for a drain of many batches: ``producer.MANY_BATCHES``):
        the same rule, each step over every batch (a batch whose timestamps span 64 ms or more counts its deltas'
        extra bytes in Python, as ``batch_bytes``)."""
        if not self.vbody and not self.legacy:  # (v2 with a record length that varies: each record alone)
            return np.array(self.batches_bytes(los, ns), dtype=np.int64)
        lo = np.array(los, dtype=np.int64)
        n = np.array(ns, dtype=np.int64)
        records = n * self.per
        if self.vbody:
            if max(ns) > 64:  # offset deltas of 64 and more: 2 bytes...
                records += np.maximum(n - 64, 0) + np.maximum(n - 8192, 0) + np.maximum(n - (1 << 20), 0)
            times = self.times
            view = np.frombuffer(times, dtype=np.float64)  # (the array is moved in place between drains: not kept)
            first = np.floor(view[lo])
            wide = np.flatnonzero(view[lo + n - 1] >= first + _TS_STEPS[0])
            del view
            for i in wide.tolist():  # timestamp deltas (ms) of 64 ms and more: 2 bytes... (``batch_bytes``)
                a, hi = los[i], los[i] + ns[i]
                start, last, extra = math.floor(times[a]), times[hi - 1], 0
                for step in _TS_STEPS:
                    if last < start + step:
                        break
                    extra += hi - bisect_left(times, start + step, a, hi)
                records[i] += extra
        if self.keyed:
            records += _keys_bytes_array(self.keys, lo, n, self.digits)
        if self.ratio != 1.0:
            records = np.ceil(records / self.ratio).astype(np.int64)
        return self.header + records

    def _exact(self, lo: int, n: int) -> int:
        """v2 records section, each record's DefaultRecord.sizeInBytes computed alone (NumPy)."""
        t = np.floor(np.asarray(self.times[lo:lo + n], dtype=np.float64))
        body = self.static + _varint_sizes((t - t[0]).astype(np.int64)) + _varint_sizes(np.arange(n, dtype=np.int64))
        if self.keyed:
            keys = self.keys[lo:lo + n]  # key length varint 1 + key bytes, less the null's 1
            body = body + 4 + (keys if self.digits else _key_digits(keys))
        return int((body + _varint_sizes(body)).sum())


def record_format(settings, producer) -> RecordFormat:
    """The record format of one producer (ProducerSettings) under the run's settings (the version's magic)."""
    return RecordFormat(settings.kafka.magic, producer.record_size_bytes, producer.key_cardinality,
                        producer.compression_type, producer.batch_size)


# a new batch's state, attempt, visible_at, epoch and seq (Batches._filled)
_NEW_ROW = (PENDING, 0, 0, -1, -1)
INT8_MAX, INT16_MAX, UINT16_MAX, INT32_MAX = 2**7 - 1, 2**15 - 1, 2**16 - 1, 2**31 - 1


_LARGEST = {code: (1 << (8 * array(code).itemsize - 1)) - 1 for code in "bhiq"}  # Batches.POISON's values


def _libc_madvise():
    """libc's madvise(address, length, advice), or None where there is none."""
    try:
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    call.restype = ctypes.c_int
    return call


_madvise = _libc_madvise() if hasattr(mmap, "MADV_DONTNEED") else None
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", 0)
_MADV_NOHUGEPAGE = getattr(mmap, "MADV_NOHUGEPAGE", 0)
_PAGE = mmap.PAGESIZE


def index_type(records: int) -> str:
    """The ``array`` type of a column of record indexes among `records`: int32 while they fit it, else int64."""
    return "i" if records <= INT32_MAX else "q"


class Batches:
    __slots__ = ("lo", "partition", "producer_starts", "producer_runs", "count", "bytes", "state", "attempt",
                 "acks_first", "acks_count", "acks_ms", "error", "visible_at", "visible_instants", "epoch", "seq",
                 "formats", "logs", "visible_index", "_filled", "_new_rows", "given", "_poisoned")

    def __init__(self, formats: list[RecordFormat], records: int = 0, partitions: int = 0):
        """`records`: how many records the workload holds (``fit_records`` when that grows); `partitions`: the
        cluster's (they never change)."""
        self.formats = formats  # producer -> its record format (batch bytes)
        self.lo = array(index_type(records))  # its first record (int32 while the run has fewer than 2^31 records)
        self.partition = array("h" if partitions <= INT16_MAX else "i")  # global partition index (int16 up to 32,767)
        # the producer (its index: int16, as the workload's), as runs of consecutive batch ids of one producer: a
        # drain makes one producer's batches in a row (a production-sized request, about 160), and a run grows
        # while the next batch made is the same producer's (one producer: one run), so no column a batch (2 bytes);
        # each run's first batch (int32: a batch id is, in a log's rows) and its producer. ``producer_of(b)`` reads
        # one batch's, ``producer_column()`` a NumPy array of a block's
        self.producer_starts = array("i")
        self.producer_runs = array("h")
        # records: int8 while no producer's batch takes more (``RecordFormat.records_per_batch``, the drain's cap:
        # 1 KiB records in 64 KiB batches take about 60), else int16 or int32
        most = max((f.records_per_batch for f in formats), default=0)
        self.count = array("b" if most <= INT8_MAX else "h" if most <= INT16_MAX else "i")
        # bytes on the wire and on disk: uint16 while every batch made fits it (most do: a production-sized batch
        # holds a few 1 KiB records), which ``widen`` makes int32, as Kafka's sizeInBytes, at the first that does
        # not; int64 from the start if some producer's largest batch (``RecordFormat.max_batch_bytes``) could pass
        # int32. The logs read it (``Log.batch_bytes``): each log is made by ``log``, so a widened column reaches it
        self.bytes = array("H" if all(f.max_batch_bytes <= INT32_MAX for f in formats) else "q")
        self.logs: list[Log] = []  # every log made (``log``), whose sizes ``widen`` replaces
        self.state = array("b")  # PENDING, INFLIGHT, ACKED or FAILED
        # sends so far: int8 (a batch is rarely sent more than a few times; ``widen`` makes it int32, Kafka's int,
        # at a 128th send, which retries at their default and a short backoff can reach)
        self.attempt = array("b")
        # when the producer learned of success, as runs of consecutive batch ids acknowledged at one time (a
        # response's batches, made in a row by one drain, are answered at once: a run a request, not 8 bytes a
        # batch), in the order they were acknowledged: each run's first batch, its length and the time (``acked``;
        # the results read them by run, ``BatchAccount.ack_ms_of``). Only acknowledged batches are in a run. A run
        # takes 16 bytes: where each response holds one batch (a small scenario), 8 more a batch than a column would
        self.acks_first = array("i")  # (int32: a batch id is, in a log's rows)
        self.acks_count = array("i")
        self.acks_ms = array("d")
        # the last error a batch's send ended with (a retried or failed one: Kafka's int16 error codes), by batch; a
        # batch not here has none (NONE). Few batches have one, so no column a batch
        self.error: dict[int, int] = {}
        # first time a leader's HW covered it, as the index of that instant in ``visible_instants``; 0 while none
        # has: a batch is committed (some leader's HW covered it) exactly when this is set (``committed``), so no
        # column of its own says so. An HW advance covers the batches of several partitions at one instant (a
        # follower's fetch answers them together), so the instants are kept once each: 4 bytes a batch, not 8
        # (int32: an instant is kept only when some batch becomes visible at it, and a batch does so once, so there
        # are fewer than batch ids, int32 in a log's rows). ``visible_ms`` reads a batch's time.
        self.visible_at = array("i")
        # the instants at which some batch became visible (float64, increasing), NaN first: a batch's index 0;
        # ``visible_index(now)`` gives the index of instant `now` (kept if new), for ``visible_at``
        visible = Instants(math.nan)
        self.visible_instants = visible.times
        self.visible_index = visible.index
        # producer epoch its sequence number belongs to: int8 (-1 before its first send; an epoch is bumped only when
        # a batch fails for good), which ``widen`` makes int16, Kafka's short, at the 128th epoch
        self.epoch = array("b")
        # sequence number, given at its first send in an epoch (batches go out in order): int16, which ``widen``
        # makes int32, Kafka's int, at the 32,768th batch of one producer to one partition in an epoch (the model
        # counts a producer's batches to a partition, so it stays below the batch ids, int32 in a log). The writers
        # (the producer's send loop) widen a column when a value does not fit; its readers (the producer, the
        # leaders' producer state) take the column from here each time
        self.seq = array("h")
        self._filled = (self.state, self.attempt, self.visible_at, self.epoch, self.seq)
        self._new_rows = tuple(array(c.typecode, (v,)) for c, v in zip(self._filled, _NEW_ROW))
        self.given = 0  # the rows below are given back (``give_back``): no step reads them again
        self._poisoned: dict[str, tuple[str, int]] = {}  # POISON: column -> (its type, the rows poisoned so far)

    def new(self, lo: int, count: int, partition: int, producer: int, nbytes: int = -1) -> int:
        """A batch of records [lo, lo + count) (`nbytes`: its bytes, if known: ``batch_bytes``); returns its id. When
        it was created (Kafka's ProducerBatch.createdMs, from which delivery.timeout.ms counts) is its first record's
        time in the accumulator (``Accumulator.times`` at its ``lo``, which moves with it): not kept here."""
        self.lo.append(lo)
        self.partition.append(partition)
        runs = self.producer_runs
        if not runs or runs[-1] != producer:  # another producer's batch than the last one made: a new run
            self.producer_starts.append(len(self.count))
            runs.append(producer)
        self.count.append(count)
        size = self.formats[producer].batch_bytes(lo, count) if nbytes < 0 else nbytes
        try:
            self.bytes.append(size)
        except OverflowError:  # the first batch past uint16: the column widens
            self.widen("bytes").append(size)
        # the fields every new batch starts with, copied from one-cell arrays of them (an append parses its value)
        state, attempt, visible_at, epoch, seq = self._new_rows
        self.state.extend(state)
        self.attempt.extend(attempt)
        self.visible_at.extend(visible_at)
        self.epoch.extend(epoch)
        self.seq.extend(seq)
        return len(self.lo) - 1

    def new_many(self, los, counts, partitions, producer: int, sizes) -> int:
        """A batch of records [lo, lo + count) of each partition (`sizes`: their bytes, ``batches_bytes``, a list or
        an int64 array, ``batches_bytes_array``), made in this order; returns the first one's id (the others follow
        it)."""
        first = len(self.lo)
        k = len(los)
        self.lo.extend(los)
        self.partition.extend(partitions)
        self.count.extend(counts)
        if isinstance(sizes, np.ndarray):  # (an array's extend takes a NumPy array one boxed element at a time)
            sized = self.bytes
            if sized.typecode == "H" and k and self.formats[producer].max_batch_bytes > UINT16_MAX \
                    and int(sizes.max()) > UINT16_MAX:  # (a cast would wrap): the column widens
                sized = self.widen("bytes")
            sized.frombytes(sizes.astype(sized.typecode).tobytes())
        else:
            try:
                self.bytes.extend(sizes)
            except OverflowError:  # a batch past uint16 (those before it were appended): the column widens
                del self.bytes[first:]
                self.widen("bytes").extend(sizes)
        for column, row in zip(self._filled, self._new_rows):
            column.extend(row * k)
        runs = self.producer_runs
        if k and (not runs or runs[-1] != producer):
            self.producer_starts.append(first)
            runs.append(producer)
        return first

    def __len__(self) -> int:
        return len(self.lo)

    def log(self, segment_bytes: int, table: AppendTable) -> Log:
        """A new log (segment.bytes `segment_bytes`, sharing the append table `table`) reading these batches' sizes
        (kept in ``logs``: ``widen`` gives it the widened column)."""
        log = Log(segment_bytes, self.bytes, table)
        self.logs.append(log)
        return log

    def producer_of(self, b: int) -> int:
        """The producer of batch b: its run's (the last run without a search: the batches read are mostly the
        latest made)."""
        starts = self.producer_starts
        if b >= starts[-1]:
            return self.producer_runs[-1]
        return self.producer_runs[bisect_right(starts, b) - 1]

    def producer_column(self) -> "RunColumn":
        """The producers of the batches as a column read by slices or index arrays (``RunColumn``)."""
        return RunColumn(self.producer_starts, self.producer_runs, len(self.lo))

    def acked(self, ids: list[int], now: float) -> None:
        """Batches `ids` (distinct, none acknowledged before; their state set ACKED by the caller) were acknowledged
        at `now`: kept as runs of consecutive ids (``acks_first``, ``acks_count``, ``acks_ms``)."""
        n = len(ids)
        if n == 1:  # (a response of one batch, a small scenario's usual one: no min, max or sort)
            lo = ids[0]
        elif not n:
            return
        else:
            lo = min(ids)
            if max(ids) - lo + 1 != n:  # not one range: a run for each range of consecutive ids
                ids = sorted(ids)
                start = prev = ids[0]
                for b in ids[1:]:
                    if b != prev + 1:
                        self._ack_run(start, prev - start + 1, now)
                        start = b
                    prev = b
                self._ack_run(start, prev - start + 1, now)
                return
        self._ack_run(lo, n, now)  # one range (distinct ids): a request's batches, made in a row

    def _ack_run(self, lo: int, n: int, now: float) -> None:
        """Batches lo..lo+n-1 acknowledged at `now`: the last run grows if they follow it at the same time."""
        first, count, at = self.acks_first, self.acks_count, self.acks_ms
        if at and at[-1] == now and first[-1] + count[-1] == lo:
            count[-1] += n
        else:
            first.append(lo)
            count.append(n)
            at.append(now)

    def committed(self, b: int) -> bool:
        """Some leader's HW covered batch b (its ``visible_at`` is set)."""
        return self.visible_at[b] != 0

    def visible_ms(self, b: int) -> float:
        """When some leader's HW first covered batch b (NaN: none has)."""
        return self.visible_instants[self.visible_at[b]]

    def widen(self, name: str) -> array:
        """A value does not fit column `name` (``attempt``, ``epoch``, ``seq`` or ``bytes``): the column becomes
        Kafka's type for it (int32, int16, int32, int32), its values kept, and is returned (the producer's send loop
        writes into the new column; every reader takes the column from here, the logs theirs from ``logs``)."""
        if name == "bytes":
            column = self.bytes = array("i", self.bytes)
            for log in self.logs:
                log.batch_bytes = column
            return column
        if name == "attempt":
            column = self.attempt = array("i", self.attempt)
        elif name == "epoch":
            column = self.epoch = array("h", self.epoch)
        elif name == "seq":
            column = self.seq = array("i", self.seq)
        else:
            raise ValueError(f"no column {name} widens")
        self._filled = (self.state, self.attempt, self.visible_at, self.epoch, self.seq)
        self._new_rows = tuple(array(c.typecode, row) for c, row in zip(self._filled, self._new_rows))
        return column

    # the table's columns (and the errors by batch, a dict): what a batch is made of, and all two runs that make the
    # same batches share (the other attributes are the formats, the logs and the table's own bookkeeping)
    COLUMNS = ("lo", "partition", "producer_starts", "producer_runs", "count", "bytes", "state", "attempt", "acks_first",
               "acks_count", "acks_ms", "error", "visible_at", "visible_instants", "epoch", "seq")
    # the columns no step of the run reads for a batch once its account is folded (``give_back``): a settled batch
    # is not sent again, and the leaders read only the batches they append (``bytes`` stays: a follower's fetch
    # reads the sizes of rows below its log end, which a lagging follower may be far behind)
    GIVEN_BACK = ("lo", "partition", "count", "state", "attempt", "visible_at", "epoch", "seq")
    POISON = False  # tests: fill what is given back with each column's largest value instead (a read shows)

    def give_back(self, upto: int) -> None:
        """Nothing reads the rows below `upto` again (``results.accounting.AccountFold`` has folded their account):
        the whole pages of their cells in ``GIVEN_BACK``'s columns are given back to the system (madvise
        MADV_DONTNEED: a page read after that reads zeros, one written is allocated again; and MADV_NOHUGEPAGE
        first, so that the kernel does not make a transparent huge page there again, given-back pages included). The
        indexes stay: a batch id is the same row. Each call gives back from each column's start: a column that grew
        may have been copied elsewhere, its given-back pages with it, and may even come back to an address it had.
        Where the platform has no madvise, nothing is given back (the same results)."""
        given = self.given = max(self.given, min(upto, len(self.lo)))
        for name in self.GIVEN_BACK:
            column = getattr(self, name)
            address, n = column.buffer_info()
            if self.POISON:  # (a copy keeps the values: poisoned again only from the last bound, or once widened)
                code, first = self._poisoned.get(name, (column.typecode, 0))
                first = first if code == column.typecode else 0
                if given > first:
                    column[first:given] = array(column.typecode, (_LARGEST[column.typecode],)) * (given - first)
                self._poisoned[name] = (column.typecode, given)
                continue
            lo = -(-address // _PAGE) * _PAGE
            hi = (address + min(given, n) * column.itemsize) // _PAGE * _PAGE
            if hi > lo and _madvise is not None:
                if _MADV_NOHUGEPAGE:  # (else the kernel may fill a huge page there again, given-back pages included)
                    _madvise(lo, hi - lo, _MADV_NOHUGEPAGE)
                _madvise(lo, hi - lo, _MADV_DONTNEED)

    def fit_records(self, records: int) -> None:
        """The workload now holds `records` records: ``lo`` widens to int64 if they no longer fit int32 (its readers
        take the column from here, not a copy of their own)."""
        if self.lo.typecode != index_type(records):
            self.lo = array("q", self.lo)

    def decompress_ms(self, b: int, producer: int = -1) -> float:
        """CPU ms a broker spends decompressing batch b to validate it (LogValidator; 0 uncompressed): its records'
        uncompressed bytes x the codec's decompress_ms_per_byte (`producer`: the batch's, if the caller knows it)."""
        f = self.formats[self.producer_of(b) if producer < 0 else producer]
        if f.ratio == 1.0:
            return 0.0
        return (self.bytes[b] - f.header) * f.ratio * f.decompress_ms

    def of_records(self, records: int) -> np.ndarray:
        """Per record, the batch holding it (-1: still in the accumulator at the end)."""
        if not self.lo:
            return np.full(records, -1, dtype=np.int64)
        # batch b + 1 from lo[b] on, back to 0 at its end (batches never overlap): a running sum, then -1
        lo = np.asarray(self.lo, dtype=np.int64)
        ids = np.arange(1, len(lo) + 1, dtype=np.int64)
        steps = np.zeros(records + 1, dtype=np.int64)
        np.add.at(steps, lo, ids)
        np.add.at(steps, lo + np.asarray(self.count, dtype=np.int64), -ids)
        out = np.cumsum(steps[:-1])
        out -= 1
        return out


class RunColumn:
    """A column of `n` rows kept as runs (`starts`: each run's first row, increasing from 0; `values`: its value),
    read as NumPy arrays: ``column[a:b]`` or ``column[rows]`` (an index array) gives those rows' values, as a
    slice or a fancy index of the whole column would, without the whole column (``Batches.producer_column``)."""

    __slots__ = ("starts", "values", "n")

    def __init__(self, starts: array, values: array, n: int):
        self.starts = np.frombuffer(starts, dtype=starts.typecode) if len(starts) else np.zeros(0, starts.typecode)
        self.values = np.frombuffer(values, dtype=values.typecode) if len(values) else np.zeros(0, values.typecode)
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows) -> np.ndarray:
        if isinstance(rows, slice):
            rows = np.arange(*rows.indices(self.n))
        else:
            rows = np.asarray(rows)
            if rows.dtype == np.bool_:
                rows = np.flatnonzero(rows)
        return self.values[np.searchsorted(self.starts, rows, side="right") - 1]
