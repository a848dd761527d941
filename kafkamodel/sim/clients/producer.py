"""The producer client's Sender: produce requests per broker connection, answers, retries, metadata.

Each producer keeps one connection per broker (``network_client``). When one
of a broker's partitions is ready (``accumulator``) and the connection has
fewer than ``max.in.flight.requests.per.connection`` requests unanswered, the
sender drains that broker: one batch from every partition it leads that has
one (up to ``max.request.size``), in one request. The Sender wakes up once
per connection, at the first time one of its queues is ready (Sender.runOnce
polls with RecordAccumulator.ready's next check delay), not once per queue;
a connection with no slot wakes it when an answer frees one, and a ready
queue that did not fit in a request goes in the next one at once (Kafka's
Sender polls without waiting while a node has ready data). The broker answers the
request as a whole (acks=all: once every partition in it is committed). A
failed batch (an error in the answer, or its request failed with its
connection) is retried ahead of newer records; a partition whose leader is
unknown waits for a metadata refresh (``retry.backoff.ms``), answered by the
broker NetworkClient.leastLoadedNode picks, from its metadata cache: a
leader change reaches it with the controller's UpdateMetadata. The broker
handles a connection's requests one at a time (``server``), so a plain
producer's batches reorder only when one fails and a later one, already in
flight, does not.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from heapq import heappop, heappush
from itertools import accumulate, chain, repeat
from operator import itemgetter

import numpy as np

from ...config.distributions import Sampler
from ...config.settings import ProducerSettings, nic_ms_per_byte
from .metadata import MetadataUpdater, exponential_backoff
from ..protocol import (
    ACKED,
    DELIVERY_TIMEOUT,
    FAILED,
    INFLIGHT,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PENDING,
)
from .accumulator import INF, Accumulator, PartitionQueue
from .application import ApplicationThread, PoolWatch, Unsent, in_time_order, release, send_records
from .slots import SendOrder
from ..results import latency
from .network_client import Connection

MANY_BATCHES = 32  # a drain cuts at least this many batches after its first: their bytes are counted in NumPy at once
_PARTITION = itemgetter(1)  # a drain heap entry's partition
BLOCK = 1 << 20  # batches whose first record a relayout moves at a time (its temporaries: 8-16 bytes a batch of a block)


class ProducerState:
    """What one producer client tracks while it runs."""

    __slots__ = ("index", "node", "config", "acc", "metadata", "conns", "heaps", "ready", "wake", "no_leader", "refresh_armed",
                 "refresh_stamp", "last_refresh_ms", "jitter", "failed_at", "epoch", "next_seq", "next_request", "app",
                 "watch", "pooled", "nic_free", "sender_free")

    def __init__(self, index: int, node: int, config: ProducerSettings, acc: Accumulator, partitions: int,
                 brokers: int):
        self.index = index
        self.node = node  # its network node (its client.rack's, or the clients')
        self.config = config  # its settings
        self.acc = acc  # its record accumulator
        self.metadata = [-1] * partitions  # partition -> leader as this producer last learned it
        self.conns = [Connection(b) for b in range(brokers)]
        self.heaps: list[list] = [[] for _ in range(brokers)]  # broker -> (key, partition, stamp) of queues with data
        self.ready: list[list] = [[] for _ in range(brokers)]  # broker -> (ready time, partition, stamp) of those
        #                                                        ready before linger.ms after their first record
        self.wake = [INF] * brokers  # broker -> when the Sender next looks at it (its wake-up's time; INF: none)
        self.no_leader: set[int] = set()  # partitions with data and no known leader
        self.refresh_armed = False  # a metadata refresh is scheduled or in flight
        self.refresh_stamp = 0  # the metadata request in flight (an answer to an older one, or after a timeout, is void)
        self.last_refresh_ms = float("-inf")  # when the last metadata answer came (Metadata.lastRefreshMs)
        self.jitter: Iterator[float] | None = None  # KIP-580 (3.7+): its backoffs' random factors (ExponentialBackoff)
        self.failed_at: dict[int, int] = {}  # partition -> the broker its last failed batch was sent to
        self.epoch = [0] * partitions  # partition -> producer epoch; bumped when a batch fails for good (KIP-360)
        self.next_seq = [0] * partitions  # partition -> next sequence number in the current epoch
        self.next_request = 0
        self.app: ApplicationThread | None = None  # its application thread, when buffer.memory matters (application)
        self.watch: PoolWatch | None = None  # an open-loop producer's pool, while its send times stand
        self.pooled = False  # app or watch: completed batches give their pool bytes back
        self.nic_free = 0.0  # when its client machine's NIC has sent every request so far
        self.sender_free = 0.0  # when its Sender thread is done with every request so far


class ProducerClient:
    """Every producer of the scenario (clients never fail)."""

    MESSAGES = ("handle_response",)
    TIMERS = ("_run_once", "_reconnect", "_block_timeout", "_pool_full", "_written", "_signalled", "_fold")

    def __init__(self, sim, server, leader, network):
        self.kernel = sim.kernel
        self.heap, self.seq = sim.kernel.events()  # ready times go straight onto the kernel's heap (the hot path)
        self.send = sim.transport.send
        self.partitions = sim.partitions  # the controller's view, the producers' metadata at the start
        self.brokers = sim.brokers
        self.reachable = sim.transport.reachable
        self.metadata_updater = MetadataUpdater(sim, "producer_metadata_refreshes", self._answered,
                                                channel=network)  # (clients.metadata; on its connections)
        self.batches = sim.batches
        self.kip360 = sim.settings.kafka.kip360  # 2.5+: a sequence gap bumps the epoch and the batch is retried
        self.kip951 = sim.settings.kafka.kip951  # 3.7+: a new leader (hinted or in metadata) skips the resend backoff
        self.counters = sim.recorder.counters
        self.error_ms: list[float] = []  # when a batch got an error: an error answer, its request failed, or it expired
        self.settings = sim.settings
        self.duration = sim.settings.duration_ms
        w = sim.workload
        # every record's time in the accumulator (when its send() returned): 8 bytes each, read as Python floats
        times = self.times = w.ready_ms
        w.ready_ms = None
        self.workload = w
        for f in sim.batches.formats:
            f.attach(times, w.key)
        n_brokers = len(sim.brokers)
        settings = sim.settings
        machine = settings.client_machine  # each producer's own machine: its NIC, its Sender thread
        self.nic_ms_per_byte = nic_ms_per_byte(machine.nic_gbps, machine.nic_mtu)
        costs = settings.costs
        self.request_ms, self.batch_ms = costs.producer_request_us / 1000.0, costs.producer_batch_us / 1000.0
        self.states = []
        for i, config in enumerate(settings.producers):
            acc = Accumulator(i, config, times, w.lo[i].tolist(), w.hi[i].tolist(), sim.batches,
                              w.makers.get(i) if w.makers else None)
            node = sim.layout.client_node(config.client_rack)
            ps = ProducerState(i, node, config, acc, len(sim.partitions), n_brokers)
            fmt = sim.batches.formats[i]
            if w.closed and i in w.closed:
                order, covered = w.closed[i]
                ps.app = ApplicationThread(order, covered, w.lo[i], w.cost_ms[i],
                                           fmt.record_bytes, config.buffer_memory, config.max_block_ms,
                                           config.start_ms, self._stop(config))
            elif w.returns and i in w.returns:
                ps.watch = PoolWatch(w.returns[i], fmt.record_bytes, config.buffer_memory)
            ps.pooled = ps.app is not None or ps.watch is not None
            if config.retry_backoff_max_ms is not None:  # KIP-580: CommonClientConfigs.RETRY_BACKOFF_JITTER, 0.2
                ps.jitter = Sampler({"dist": "uniform", "low": 0.8, "high": 1.2},
                                    sim.streams(f"producer.backoff[{i}]")).stream
            self.states.append(ps)
            self.metadata_updater.register(ps, self._load)
        w.returns = None
        w.closed = None
        self.on_wake = self._run_once  # bound once: it goes on the heap for every wake-up
        self.on_refused = network.handle_refused  # bound once: every request carries it
        self.network = network  # the connections' in-flight requests, timeouts and failures
        self.server_produce = server.produce  # the brokers' request intake
        self.leader_handle_produce = leader.handle_produce
        # the batches a drain's ``_take_cuts`` made last: (the drain's batch list, where they start in it, the first's
        # id, how many), so ``_send_request`` fills in their first send at once (it holds the list: another list is
        # never that one)
        self.made: tuple | None = None
        self.tails: dict = {}  # producer -> the RecordMaker of a producer taken over, making what its thread reaches

    def start(self) -> None:
        if self.workload.fold is not None:
            self.kernel.schedule(latency.FOLD_MS, self._fold)
        for ps in self.states:
            for part in self.partitions:
                ps.metadata[part.index] = part.leader
            if ps.app is not None:
                self._application(ps)
                continue
            if ps.watch is not None:
                self._pool_full(ps, ps.watch.stamp)
            for q in ps.acc.queues:
                if q.next < q.end:
                    self._arm(ps, q)

    # ---- a closed-loop producer's application thread (application) ------------------------------------------

    def _application(self, ps: ProducerState) -> None:
        """The application thread sends what the pool has room for; the queues that got records are filed again."""
        app = ps.app
        w = self.workload
        placed, until = send_records(app, self.kernel.now, self.times, w, self._grow)
        if placed is not None:
            self._arm_grown(ps, *placed)
        if until is not None:
            app.stamp += 1  # (voids the timer of a send() blocked before)
            if until <= self.duration:  # one past the run's end would never fire, only sit on the heap: a pool full
                #                         for good re-blocks at every batch it completes (max.block.ms 60 s)
                self.kernel.schedule(until, self._block_timeout, ps, app.stamp)

    def _block_timeout(self, ps: ProducerState, stamp: int) -> None:
        """max.block.ms passed with send() blocked: it fails, and the application goes on."""
        if ps.app.stamp == stamp:
            self._application(ps)

    def _stop(self, config) -> float:
        """No send() after this: the producer's stop.ms, or the run's end."""
        end = self.duration
        return min(config.stop_ms, end) if config.stop_ms is not None else end

    def _completed(self, ps: ProducerState, b: int) -> None:
        """A batch completed (acked or failed for good): its bytes go back to the producer's pool. The application
        thread runs once the Sender's work of this instant is done (``_signalled``), not once per batch."""
        app = ps.app
        if app is not None:
            release(app, self.batches.count[b])
            if not app.signalled:
                app.signalled = True
                self.kernel.schedule(self.kernel.now, self._signalled, ps)
        else:
            ps.watch.released += self.batches.count[b]

    def _signalled(self, ps: ProducerState) -> None:
        """The application thread blocked in BufferPool.allocate wakes up: the Sender has freed every batch it
        completed in this instant (Kafka's Sender frees a whole produce response's batches in one completeBatch loop
        on its own thread, each deallocate signalling the waiter), so the thread sends once for all of them."""
        ps.app.signalled = False
        self._application(ps)

    def _written(self, ps: ProducerState, taken: list[int]) -> None:
        """An acks=0 request left the client's NIC: its batches are done, their pool bytes go back."""
        for b in taken:
            self._completed(ps, b)

    def _pool_full(self, ps: ProducerState, stamp: int) -> None:
        """An open-loop producer's first record that does not fit calls send() (as far as was known when this was
        scheduled): if it still does not fit, its application thread takes over from it."""
        watch = ps.watch
        if watch is None or watch.stamp != stamp:
            return
        cost = self.workload.cost_ms[ps.index]
        k, at = watch.full_at(cost)
        now = self.kernel.now
        if at > now:  # later (or never): batches completed since
            if at < self._stop(ps.config):
                watch.stamp += 1
                self.kernel.schedule(at, self._pool_full, ps, watch.stamp)
            return
        self._take_over(ps, k, cost)

    def _take_over(self, ps: ProducerState, k: int, cost: float) -> None:
        """From its k-th record on (in send order: by when its send() returns, then by slot, partition after
        partition), an open-loop producer's records are the application thread's: their send times are taken back and
        given again as the pool lets them go. Only the records made so far are sorted here (with a RecordMaker, those
        up to the k-th's return; without, all of them); a maker's others come a piece at a time, already in time
        order, as the thread reaches them (``application.in_time_order``, ``RecordMaker.rest``)."""
        w = self.workload
        i = ps.index
        maker = w.makers.pop(i, None) if w.makers else None
        ps.acc.maker = None
        lo, hi = w.lo[i], w.hi[i]  # its records, partition after partition
        at = float(ps.watch.returns[k])  # the k-th record's return: the k-th least (the returns do not decrease)
        made = hi.copy()  # each partition's records made: below these
        if maker is not None:
            maker.upto(at)  # (every record returning by then: the k first and their equals)
            made[maker.first:maker.first + maker.partitions] = maker.filled
        times = self.times
        # (its records given back, RecordPages, return before `at`: the searches start past them)
        los, mades = (lo if w.pages is None else np.maximum(lo, w.pages.released[i])).tolist(), made.tolist()
        below = np.array([bisect_left(times, at, a, b) for a, b in zip(los, mades)], dtype=np.int64)
        equal = np.array([bisect_right(times, at, a, b) for a, b in zip(los, mades)], dtype=np.int64) - below
        extra = k - int((below - lo).sum())  # the records returning at `at` before the k-th (in partition order)
        start = below + np.clip(extra - (np.cumsum(equal) - equal), 0, equal)  # each partition's first from the k-th
        taken = np.array([q.next for q in ps.acc.queues], dtype=np.int64)  # below these: in batches already
        filled = np.maximum(start, taken)  # a partition's remaining records are its last slots
        drained = int((filled - start).sum())  # appended at this very instant and drained (no send() cost)
        # the records made and remaining, in send order
        sizes = made - filled
        view = np.frombuffer(times, dtype=np.float64)
        slots = np.repeat(filled - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
        returns = view[slots]
        by = np.argsort(returns, kind="stable")
        returns, slots = returns[by], slots[by]
        parts = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)[by]
        del by
        # each record's key goes with it only if a send() may fail (the records after it in its partition then take
        # the slots one earlier); else each takes the slot it has, whose key is its own already (the j-th of a
        # partition's remaining records in send order takes its j-th remaining slot; a maker writes the keys of the
        # ones it makes from now on into their slots)
        keyed = ps.config.key_cardinality is not None and self._may_fail(ps)
        keys = w.key[slots] if keyed else None
        view[slots] = np.inf
        del slots, view  # (no view of the accumulator's times outlives its use: slots may move)
        for q, a in zip(ps.acc.queues, mades):  # (the slots not made yet: +inf, nothing sent there, written as read,
            q.made = a  #                           application.Unsent)
        more = in_time_order(chain(((returns, parts, keys),), maker.rest(keyed) if maker is not None else ()), cost)
        del returns, parts, keys
        if maker is not None:
            self.tails[i] = maker
        n = int((hi - filled).sum())
        fmt = self.batches.formats[i]
        order = SendOrder(n, parts=np.empty(0, dtype=np.int32), key=w.key[:0].copy() if keyed else None)
        app = ps.app = ApplicationThread(order, n, filled, cost, fmt.record_bytes, ps.config.buffer_memory,
                                         ps.config.max_block_ms, self.kernel.now, self._stop(ps.config),
                                         np.empty(0, dtype=np.float64), more)
        app.used = (k + drained - ps.watch.released) * fmt.record_bytes
        ps.watch = None
        ps.acc.maker = Unsent(ps.acc, app)
        for q in ps.acc.queues:
            if q.next < q.end:
                self._arm(ps, q)
        self._application(ps)

    def _fold(self) -> None:
        """Every ``latency.FOLD_MS``: the batches settled since the last time go into the latency histograms
        (``latency.Fold``: each record's send() call made by ``Workload.send_calls``, as the end makes them), and the
        pages of the records they folded are given back (``RecordPages``). An open-loop producer whose pool may fill
        keeps the records that do not return before its first record that does not fit so far (``PoolWatch``): a
        take-over searches its times from there. Where the run allows it (``accounting.AccountFold``), the account of
        the batches folded goes with them, and their rows of the batch table are given back (``_give_back``)."""
        w = self.workload
        fold = w.fold
        if fold is None:
            return
        batches = self.batches
        view = np.frombuffer(self.times, dtype=np.float64)  # (dropped when this returns: no view outlives its use)
        first, last = fold.sweep(batches, view, w.send_calls)
        pages = w.pages
        if pages is not None and last > first:
            width = w.lo.shape[1]
            lo = np.frombuffer(batches.lo, dtype=batches.lo.typecode)[first:last].astype(np.int64)
            lo += np.frombuffer(batches.count, dtype=batches.count.typecode)[first:last]
            cell = batches.producer_column()[first:last].astype(np.int64) * width
            cell += np.frombuffer(batches.partition, dtype=batches.partition.typecode)[first:last]
            folded = pages.folded.ravel()
            np.maximum.at(folded, cell, lo)  # (each range's folded records: a prefix, its batches cut in order)
            bound = np.full(len(self.states), INF)
            for ps in self.states:
                watch = ps.watch
                if watch is not None:
                    k = watch.fit + watch.released
                    if k < len(watch.returns):
                        bound[ps.index] = float(watch.returns[k])
            held = pages.released.ravel()
            last_time = view[np.maximum(folded - 1, 0)]
            upto = np.where((folded > held) & (last_time < np.repeat(bound, width)), folded, held)
            pages.release(upto.reshape(w.lo.shape), w.lo, w.hi)
        account = fold.account
        if account is not None and not account.stopped:  # the account of the rows it folded, and their cells given back
            account.sweep(batches, fold.upto)
            self._give_back()
        now = self.kernel.now
        if now + latency.FOLD_MS <= self.duration:
            self.kernel.schedule(now + latency.FOLD_MS, self._fold)

    def _may_fail(self, ps: ProducerState) -> bool:
        """Whether a send() of the producer's application thread, blocked from now on, can fail (max.block.ms) before
        the run ends."""
        return self.kernel.now + ps.config.max_block_ms <= self.duration

    def _grow(self, app: ApplicationThread, k: int) -> array | memoryview | None:
        """The application thread is about to send its k-th record and its slots hold fewer: they grow to hold its
        records up to what its pace so far would send by its stop (at least twice as many, at most its order); every
        other application thread whose slots are short of its order grows alike (one move for all)."""
        w = self.workload
        sizes = w.hi - w.lo
        now = self.kernel.now
        for ps in self.states:
            a = ps.app
            if a is None or a.covered >= len(a.order):
                continue
            elapsed = now - a.start_ms
            pace = a.k / elapsed * (a.end_ms - a.start_ms) * 1.1 if elapsed > 0 else 0.0
            a.covered = min(len(a.order), max(k if a is app else 0, 2 * a.covered, int(pace)))
            sizes[ps.index] = a.order.counts(a.covered, sizes.shape[1])
        self._relayout(sizes)
        return self.times  # (a new array if the slots were a buffer made as read)

    def _relayout(self, sizes: np.ndarray, times: bool = True) -> None:
        """The workload's slots take `sizes` per producer and partition (``slots.resize``); every record index held
        moves with its range: the accumulator's times (unless `times` is False: released, the run is over, and no
        range grows, so the per-record arrays are closed up in place) and queues, the application threads' next free
        slots, the batches' first records (a block of the batch table at a time: the run's end is where it peaks)."""
        w = self.workload
        if times:  # (every record made first: the slots of the ones not made yet move too)
            w.make_all()
            for ps in self.states:
                if isinstance(ps.acc.maker, Unsent):  # (a taken-over producer's slots past its thread's: +inf)
                    ps.acc.maker.finish()
                ps.acc.maker = None
        shift, move = w.resize(sizes, in_place=not times)
        if times:
            view = np.frombuffer(self.times, dtype=np.float64)
            moved = move(view, np.inf)
            del view
            if isinstance(self.times, array):
                del self.times[:]  # the same array, which the accumulators and record formats hold
                self.times.frombytes(memoryview(moved).cast("B"))
            else:  # (a buffer made as read: an array from now on, held by the accumulators and record formats)
                self.times = array("d")
                self.times.frombytes(memoryview(moved).cast("B"))
                for ps in self.states:
                    ps.acc.times = self.times
            del moved
            for f in self.batches.formats:
                f.attach(self.times, w.key)
            for i, maker in self.tails.items():  # (a taken-over producer's maker writes the keys of what it makes)
                maker.key = w.key
                maker.filled += shift[i, maker.first:maker.first + maker.partitions]
        flat = shift.ravel()
        batches = self.batches
        batches.fit_records(w.records)
        if batches.lo:
            lo = np.frombuffer(batches.lo, dtype=batches.lo.typecode)  # views: moved in place
            producer = batches.producer_column()  # (read a block at a time: kept as runs)
            partition = np.frombuffer(batches.partition, dtype=batches.partition.typecode)
            width = shift.shape[1]
            for a in range(batches.given, len(lo), BLOCK):  # (the rows given back: no step reads them again)
                cell = producer[a:a + BLOCK].astype(np.int64) * width + partition[a:a + BLOCK]
                lo[a:a + BLOCK] += flat[cell]
            del lo, producer, partition
        for ps in self.states:
            moves, ends = shift[ps.index].tolist(), w.hi[ps.index].tolist()
            for q in ps.acc.queues:
                q.next += moves[q.p]
                q.made = q.end = ends[q.p]  # (every record made: make_all above, or _release at the run's end)
            if ps.app is not None:
                ps.app.filled += shift[ps.index]

    def finish(self) -> None:
        """The run ended: the slots of records application threads never sent are dropped (the ranges shrink to
        what was filled)."""
        w = self.workload
        self._give_back()  # (a column moved as it grew since the last sweep may hold its rows' copies again)
        self._release()  # (first: the accumulator's times are not moved with the slots below)
        if any(ps.app is not None for ps in self.states):
            sizes = w.hi - w.lo
            for ps in self.states:
                if ps.app is not None:
                    sizes[ps.index] = ps.app.filled - w.lo[ps.index]
            self._relayout(sizes, times=False)
            self.counters.producer_buffer_wait_ms = sum(ps.app.wait_ms for ps in self.states if ps.app is not None)
            self.counters.buffer_exhausted_records = sum(ps.app.exhausted for ps in self.states if ps.app is not None)

    def _give_back(self) -> None:
        """The batch table's rows that nothing reads again are given back (``Batches.give_back``): those whose
        account is folded (``accounting.AccountFold``) and whose latencies are in the histograms (``latency.Fold``)."""
        fold = self.workload.fold
        if fold is not None and fold.account is not None:
            self.batches.give_back(min(fold.done, fold.account.base))

    def _release(self) -> None:
        """What only the run reads goes before the results are built (their peak is the run's): the accumulator's
        times become the workload's send_ms in place (``Workload.send_calls``: 8 bytes a record, held once), an
        application thread's send order and arrivals (up to 16 bytes a record it took over), a pool watch's send()
        returns; without a records table (results.records: none) the records' keys (4 bytes a record: the record
        formats were their only reader)."""
        self.workload.make_all()  # (every record's time is read below)
        times, self.times = self.times, array("d")
        for ps in self.states:
            ps.acc.times = self.times
            ps.acc.maker = None
        sent: np.ndarray | None = None  # (an application thread's slots past its next one: dropped by finish)
        for ps in self.states:
            if ps.app is not None:
                if sent is None:
                    sent = self.workload.hi.copy()
                sent[ps.index] = ps.app.filled
        self.workload.send_ms = self.workload.send_calls(np.frombuffer(times, dtype=np.float64), sent=sent)
        del times  # (the send times' buffer now: nothing else holds it)
        if self.settings.results_records == "none":
            self.workload.key = None
        for f in self.batches.formats:
            f.attach(None, None)
        for ps in self.states:
            ps.watch = None
            if ps.app is not None:
                ps.app.order = ps.app.arrivals = ps.app.more = None
        self.tails.clear()

    # ---- the accumulator's queues and the sender's wake-ups --------------------------------------------------

    def _arm(self, ps: ProducerState, q: PartitionQueue) -> None:
        """(Re)file the queue under its leader's connection: its data for a drain, its head's ready time for the
        Sender's next wake-up there (if earlier than the one scheduled, and the connection can take a request)."""
        stamp = q.stamp = q.stamp + 1
        key, at = ps.acc.due(q)
        if key == INF:
            q.node = -1
            return
        p = q.p
        node = ps.metadata[p]
        if node < 0:
            q.node = -1
            ps.no_leader.add(p)
            self._request_metadata(ps)
            return
        q.node = node
        heappush(ps.heaps[node], (key, p, stamp))
        if at < key + ps.acc.linger:  # ready before linger.ms after its first record (full, or a resend): filed by
            heappush(ps.ready[node], (at, p, stamp))  # its ready time too (else _first_ready has it from its key)
        if at < ps.wake[node]:
            cfg = ps.config
            if not cfg.acks or len(ps.conns[node].inflight) < cfg.max_in_flight:  # (else its answer looks again)
                self._wake_at(ps, node, at)

    def _arm_grown(self, ps: ProducerState, touched: list[int], firsts: list[int]) -> None:
        """``_arm`` for the queues the application thread just gave records (`touched`, partitions; `firsts`: the
        first slot each got), in one pass. A queue filed already keeps its entry (and stamp): records added at its
        tail leave its head, so its drain key, as it was (its head's arrival, or its resend's backoff); only its
        ready time may come earlier (its first batch.size of records now arrived within linger.ms: filed by that
        time too, under the entry's stamp), and the Sender's wake-up is checked with its ready time as ``_arm``
        checks it. The others are filed by ``_arm``."""
        acc = ps.acc
        queues, due, linger, cap = acc.queues, acc.due, acc.linger, acc.cap
        wake, ready = ps.wake, ps.ready
        for p, first in zip(touched, firsts):
            q = queues[p]
            node = q.node
            if node < 0:
                self._arm(ps, q)
                continue
            key, at = due(q)  # (its key as filed; its ready time, maybe earlier now)
            # full before linger.ms, and by a record of this call (its batch.size-th: else filed by it already)
            if not q.retry and at < key + linger and q.next + cap - 1 >= first:
                heappush(ready[node], (at, p, q.stamp))
            if at < wake[node]:
                cfg = ps.config
                if not cfg.acks or len(ps.conns[node].inflight) < cfg.max_in_flight:  # (else its answer looks again)
                    self._wake_at(ps, node, at)

    @staticmethod
    def _first_ready(ps: ProducerState, node: int) -> float:
        """When the first of `node`'s filed queues is ready (INF: none is filed). A queue is ready linger.ms after
        its first record unless it is filed by an earlier ready time as well (``_arm``), so the first is the least
        of the drain heap's first live key plus linger.ms and the ready heap's first live time. Entries filed again
        since (stale) are dropped from both heaps' tops on the way (a drain skips them anyway)."""
        queues = ps.acc.queues
        at = INF
        heap = ps.heaps[node]
        while heap:
            key, p, stamp = heap[0]
            if queues[p].stamp == stamp:
                at = key + ps.acc.linger
                break
            heappop(heap)
        heap = ps.ready[node]  # (empty but for full queues and resends)
        while heap:
            first, p, stamp = heap[0]
            if queues[p].stamp == stamp:
                return first if first < at else at
            heappop(heap)
        return at

    def _wake_at(self, ps: ProducerState, node: int, at: float) -> None:
        """Schedule the Sender's wake-up for `node` at `at` (never in the past); one scheduled before for later is
        void."""
        now = self.kernel.now
        if at < now:
            at = now
        ps.wake[node] = at
        heappush(self.heap, (at, next(self.seq), self.on_wake, (ps, node, at)))

    def _run_once(self, ps: ProducerState, node: int, at: float = INF) -> None:
        """The Sender looks at `node` (Sender.runOnce, RecordAccumulator.ready): it drains it if one of its queues is
        ready, else it wakes up when the first one will be. `at`: the time of the wake-up this is (void if an
        earlier one was scheduled since); INF: the connection can take a request again."""
        if at != INF:
            if ps.wake[node] != at:
                return
            ps.wake[node] = INF
        at = self._first_ready(ps, node)
        if at <= self.kernel.now:
            self._drain(ps, node)
        elif at < ps.wake[node]:
            self._wake_at(ps, node, at)

    def _drain(self, ps: ProducerState, node: int) -> None:
        """Send one request to `node` with a batch of every partition that has one, if the connection can; then
        schedule the Sender's next wake-up for it (at once if a ready queue did not fit in the request)."""
        conn = ps.conns[node]
        cfg = ps.config
        now = self.kernel.now
        if cfg.acks and len(conn.inflight) >= cfg.max_in_flight:
            return  # an answer frees a slot, and looks again
        if conn.backoff_until > now:
            if not conn.retry_armed:
                conn.retry_armed = True
                self.kernel.schedule(conn.backoff_until, self._reconnect, ps, node)
            return
        ps.wake[node] = -INF  # the queues filed again below schedule no wake-up each: one follows the request
        heap = ps.heaps[node]
        acc = ps.acc
        queues = acc.queues
        batches = self.batches
        timeout = cfg.delivery_timeout_ms
        room = cfg.max_request_size - cfg.batch_size  # a batch joins the request (the first always) while its bytes
        #                                                so far leave batch.size of max.request.size
        times = acc.times  # (the same array for the whole run: moved in place)
        metadata = ps.metadata
        taken, touched, size = [], [], 0
        cuts: tuple | None = None  # new batches cut and not made yet, in order: their queues, first records, record
        #                            counts and heap entries (``_take_cuts``)
        cap = 0
        while heap and heap[0][0] <= now:
            entry = heappop(heap)
            _, p, stamp = entry
            q = queues[p]
            if stamp != q.stamp:
                continue
            if taken:  # after the request's first batch: new batches are cut here and made at once, below
                lo = q.next
                if metadata[p] == node and not q.retry and lo < q.end:
                    first = times[lo]
                    if first <= now and now - first < timeout:
                        if cuts is None:
                            cuts = qs, los, counts, filed = [], [], [], []
                            cap = acc.cap
                        top = lo + cap  # (Accumulator.take's cut: every record arrived so far, up to batch.size)
                        end = q.end
                        if q.made < top and q.made < end:  # (its records made first: Accumulator.make)
                            acc.make(q, top if top < end else end)
                        hi = q.next = bisect_right(times, now, lo, top if top < end else end)
                        qs.append(q)
                        los.append(lo)
                        counts.append(hi - lo)
                        filed.append(entry)
                        continue
                if cuts:  # anything else: the batches cut before it first
                    size = self._take_cuts(ps, cuts, taken, touched, size, room, heap)
                    cuts = None
                if size > room:  # the request is full: the rest wait for the next one
                    heappush(heap, entry)  # (as if not taken out)
                    break
            if metadata[p] != node:
                self._arm(ps, q)
                continue
            touched.append(q)
            b = acc.take(q, now)
            while b >= 0 and now - times[batches.lo[b]] >= timeout:  # it waited delivery.timeout.ms: it fails
                if q.probe == b:
                    q.probe = -1
                self._fail(ps, b, DELIVERY_TIMEOUT)
                b = acc.take(q, now)
            if b >= 0:
                taken.append(b)
                size += batches.bytes[b]
        if cuts:
            size = self._take_cuts(ps, cuts, taken, touched, size, room, heap)
        for q in touched:
            self._arm(ps, q)
        if taken:
            self._send_request(ps, conn, taken, size)
        ps.wake[node] = INF
        if cfg.acks and len(conn.inflight) >= cfg.max_in_flight:
            return  # an answer looks again
        at = self._first_ready(ps, node)
        if at != INF:
            ps.wake[node] = at = at if at > now else now  # (_wake_at inline: once per request)
            heappush(self.heap, (at, next(self.seq), self.on_wake, (ps, node, at)))

    def _take_cuts(self, ps: ProducerState, cuts: tuple, taken: list[int], touched: list, size: int, room: int,
                   heap: list) -> int:
        """The drain's new batches `cuts` (in order, after the request's first: their queues, first records, record
        counts and heap entries), made at once while the request's bytes so far are at most `room`; those that do
        not fit go back to their queues and their entries to the heap, as they were. Returns the request's bytes
        (past `room`: it is full). Many batches (``MANY_BATCHES``) are sized in NumPy (``batches_bytes_array``)."""
        qs, los, counts, filed = cuts
        fmt = self.batches.formats[ps.index]
        n = len(los)
        if n >= MANY_BATCHES:
            sizes = fmt.batches_bytes_array(los, counts)
            sums = np.empty(n + 1, dtype=np.int64)  # the request's bytes before each (batch sizes are positive)
            sums[0] = size
            np.cumsum(sizes, out=sums[1:])
            sums[1:] += size
            k = int(np.searchsorted(sums, room, side="right"))  # the first that finds more than `room` before it,
            #                                                     and those after, wait
        else:
            sizes = fmt.batches_bytes(los, counts)
            sums = list(accumulate(sizes, initial=size))
            k = bisect_right(sums, room)
        if k < n:
            for q, lo, entry in zip(qs[k:], los[k:], filed[k:]):
                q.next = lo
                heappush(heap, entry)
            del qs[k:], los[k:], counts[k:], filed[k:]
            sizes = sizes[:k]
        else:
            k = n
        if k:
            touched.extend(qs)
            first = self.batches.new_many(los, counts, list(map(_PARTITION, filed)), ps.index, sizes)
            self.made = (taken, len(taken), first, k)  # (``_send_request``: the request's last k batches are new)
            taken.extend(range(first, first + k))
        return int(sums[k])

    def slot_freed(self, ps: ProducerState, node: int) -> None:
        """A request that carried no batch (metadata) was answered on the full connection to `node`: a slot is
        free again, the Sender looks."""
        self._run_once(ps, node)

    def _reconnect(self, ps: ProducerState, node: int) -> None:
        ps.conns[node].retry_armed = False
        self._run_once(ps, node)

    # ---- requests ---------------------------------------------------------------------------------------------

    def _send_request(self, ps: ProducerState, conn: Connection, taken: list[int], nbytes: int) -> None:
        """A request with the batches `taken` (`nbytes` in all)."""
        now = self.kernel.now
        cfg = ps.config
        batches = self.batches
        queues = ps.acc.queues
        answered = cfg.acks != 0  # acks=0: success once it is on the wire; no answer comes
        entries = []
        attempts, states, partition_of = batches.attempt, batches.state, batches.partition
        idempotent = cfg.enable_idempotence
        epochs, seqs, epoch_of, next_seq = batches.epoch, batches.seq, ps.epoch, ps.next_seq
        made = self.made
        if made is not None and made[0] is taken and len(taken) == made[1] + made[3]:
            self.made = None
            _, pos, first, k = made  # taken[pos:] are the batches first.. made by the drain: never sent, no sequence
            first_attempt = self._send_new(ps, first, k, answered)
            attempts = batches.attempt  # (widened, maybe)
            resent = taken[:pos]
        else:
            first = k = first_attempt = 0
            resent = taken
        for b in resent:  # (the drain's first batch, and any batch sent before)
            p = partition_of[b]
            attempt = attempts[b] + 1
            try:
                attempts[b] = attempt
            except OverflowError:  # its 128th send: the column widens (Batches.widen)
                attempts = batches.widen("attempt")
                attempts[b] = attempt
            if idempotent and epochs[b] != epoch_of[p]:  # first send in this epoch: a sequence
                try:
                    epochs[b] = epoch_of[p]
                except OverflowError:  # its producer's 128th epoch: the column widens
                    epochs = batches.widen("epoch")
                    epochs[b] = epoch_of[p]
                try:
                    seqs[b] = next_seq[p]
                except OverflowError:  # the 32,768th batch of an epoch to a partition: the column widens
                    seqs = batches.widen("seq")
                    seqs[b] = next_seq[p]
                next_seq[p] += 1
            entries.append((b, attempt))
            if answered:
                states[b] = INFLIGHT
                queues[p].inflight += 1
        if k:
            entries.extend(zip(range(first, first + k), repeat(first_attempt)))
        n = len(entries)
        counters = self.counters
        counters.produce_requests += 1
        counters.produce_batches += n
        node, epoch, index = conn.node, conn.epoch, ps.index
        req = ps.next_request = ps.next_request + 1
        handler_args = (node, index, epoch, req, entries)
        key = (index, epoch, node)  # the broker's side of this connection (muted while it handles one)
        # its client machine: the Sender thread builds it (per request and per batch), then its NIC sends it after
        # the requests before it
        at = (ps.sender_free if ps.sender_free > now else now) + self.request_ms + self.batch_ms * n
        ps.sender_free = at
        if self.nic_ms_per_byte:
            at = (ps.nic_free if ps.nic_free > at else at) + nbytes * self.nic_ms_per_byte
            ps.nic_free = at
        delay = at - now
        if not answered:
            done = []
            for b, _ in entries:
                if batches.state[b] != ACKED:
                    batches.state[b] = ACKED
                    done.append(b)
            batches.acked(done, now)
            if ps.pooled:  # the batches complete once the NIC has sent them (Kafka: written to the socket)
                self.kernel.schedule(at, self._written, ps, taken)
            self.send(ps.node, node, self.server_produce,
                      (node, key, self.leader_handle_produce, handler_args, n, nbytes), nbytes=nbytes, delay=delay)
            return
        conn.inflight[req] = entries
        conn.sent_ms[req] = now
        self.send(ps.node, node, self.server_produce, (node, key, self.leader_handle_produce, handler_args, n, nbytes),
                  False, self.on_refused, nbytes, 0, delay)  # (positional: a call CPython specialises)
        self.network.sent(ps, conn, now)

    def _send_new(self, ps: ProducerState, first: int, k: int, answered: bool) -> int:
        """The first send of the k new batches from `first` (made by one drain, of k different partitions): their
        attempt (returned: a new batch's, plus one), each column written once; an idempotent producer's sequence per
        partition, as ``_send_request`` gives a batch's first send in an epoch (a new batch has none yet: its epoch
        is -1)."""
        batches = self.batches
        end = first + k
        attempts = batches.attempt
        attempt = attempts[first] + 1  # (a new batch's row: every one the same)
        try:
            attempts[first:end] = array(attempts.typecode, (attempt,)) * k
        except OverflowError:  # its 128th send: the column widens (Batches.widen)
            attempts = batches.widen("attempt")
            attempts[first:end] = array(attempts.typecode, (attempt,)) * k
        parts = batches.partition[first:end]
        queues = ps.acc.queues
        if ps.config.enable_idempotence:
            epoch_of, next_seq = ps.epoch, ps.next_seq
            seqs = list(map(next_seq.__getitem__, parts))
            epochs = list(map(epoch_of.__getitem__, parts))
            for name, values in (("epoch", epochs), ("seq", seqs)):
                column = getattr(batches, name)
                try:
                    column[first:end] = array(column.typecode, values)
                except OverflowError:  # a value past the column's type: it widens first (Batches.widen)
                    column = batches.widen(name)
                    column[first:end] = array(column.typecode, values)
            for p, s in zip(parts, seqs):
                next_seq[p] = s + 1
                if answered:
                    queues[p].inflight += 1
        elif answered:
            for p in parts:
                queues[p].inflight += 1
        if answered:
            states = batches.state
            states[first:end] = array(states.typecode, (INFLIGHT,)) * k
        return attempt

    def handle_response(self, pi: int, node: int, epoch: int, req: int, results: list) -> None:
        """The broker's answer to a request: (batch, attempt, error, base offset) for each batch in it, in the
        request's order: acked, or retried (``_batch_failed``). The acked batches complete in one loop
        (Sender.completeBatch): each gives its pool bytes back (``_completed``), and the application thread wakes
        once for all of them."""
        ps = self.states[pi]
        conn = ps.conns[node]
        inflight = conn.inflight
        full = len(inflight) >= ps.config.max_in_flight  # (no wake-up was scheduled while it was)
        if conn.epoch != epoch or inflight.pop(req, None) is None:
            return  # an answer on a connection closed since
        del conn.sent_ms[req]
        conn.failures = 0
        batches = self.batches
        attempts, states, partition_of = batches.attempt, batches.state, batches.partition
        done: list[int] = []  # the batches acknowledged now
        queues = ps.acc.queues
        now = self.kernel.now
        pooled = ps.pooled
        for b, attempt, error, base in results:
            if attempts[b] != attempt or states[b] != INFLIGHT:
                continue  # an answer to an abandoned attempt
            q = queues[partition_of[b]]
            q.inflight -= 1
            if error == NONE:
                states[b] = ACKED
                done.append(b)
                if q.probe == b:  # the resend went through: what waited behind it follows
                    q.probe = -1
                    q.probing = False
                    self._arm(ps, q)
                if pooled:
                    self._completed(ps, b)
            else:
                self._batch_failed(ps, b, q, error, base)
        batches.acked(done, now)
        if full:  # a slot is free again: the Sender looks
            self._run_once(ps, node)

    def _batch_failed(self, ps: ProducerState, b: int, q: PartitionQueue, error: int, base: int) -> None:
        """A batch's answer is an error: it is retried (after new metadata, or at the leader the answer names), or
        fails for good."""
        p = q.p
        if error == NOT_LEADER_OR_FOLLOWER:
            if base >= 0:  # KIP-951 (3.7): the answer names the current leader: resend there at once
                self.counters.producer_leader_hints += 1
                ps.metadata[p] = base
                self._retry(ps, b, error, leader_changed=True)
                return
            ps.metadata[p] = -1  # ask for fresh metadata before the resend
        elif error == OUT_OF_ORDER_SEQUENCE_NUMBER and q.inflight == 0 and (not q.retry or q.retry[0] > b):
            if not self.kip360:  # before 2.5 the batch fails and the producer id is reset (a new epoch, here)
                self._retry(ps, b, error, final=True)
                return
            self._bump_epoch(ps, p)  # nothing earlier is pending: the broker lost our state (KIP-360)
        self._retry(ps, b, error)

    def requests_failed(self, ps: ProducerState, requests, error: int) -> None:
        """Requests in flight on a connection that closed (``network_client``): their batches are retried, after a
        metadata refresh (Kafka refreshes metadata after a disconnect)."""
        batches = self.batches
        fold = self.workload.fold
        if requests and fold is not None and fold.account is not None:  # the broker may append them still
            fold.account.stop("a connection closed with produce requests in flight")
        for entries in requests:
            for b, attempt in entries:
                if batches.attempt[b] != attempt or batches.state[b] != INFLIGHT:
                    continue
                p = batches.partition[b]
                ps.acc.queues[p].inflight -= 1
                ps.metadata[p] = -1
                self._retry(ps, b, error)
        for node, conn in enumerate(ps.conns):  # the closed connection takes requests again: the Sender looks at it
            if not conn.inflight and ps.wake[node] == INF:
                self._run_once(ps, node)

    # ---- retries and failures ---------------------------------------------------------------------------------

    @staticmethod
    def _bump_epoch(ps: ProducerState, p: int) -> None:
        """A new producer epoch: sequence numbers start again at 0 for the batches still to be written."""
        ps.epoch[p] += 1
        ps.next_seq[p] = 0

    def _retry(self, ps: ProducerState, b: int, error: int, final: bool = False, leader_changed: bool = False) -> None:
        """Resend the batch after retry.backoff.ms (KIP-580, 3.7: retry.backoff.ms x 2^(attempts - 1), at most
        retry.backoff.max.ms, times a random factor in [0.8, 1.2]; no backoff once the leader changed,
        RecordAccumulator.shouldBackoff), or fail it for good."""
        self.error_ms.append(self.kernel.now)
        batches = self.batches
        batches.error[b] = error
        q = ps.acc.queues[batches.partition[b]]
        if q.probe == b:
            q.probe = -1
        if final or batches.attempt[b] > ps.config.retries:
            self._fail(ps, b, error)
            q.probing = False  # a resend that failed for good: what waited behind it goes
            self._arm(ps, q)
            return
        batches.state[b] = PENDING
        if q.node >= 0:
            ps.failed_at[q.p] = q.node
        insort(q.retry, b)
        q.probing = ps.config.enable_idempotence
        q.backoff_until = self.kernel.now + (0.0 if leader_changed else self._backoff_ms(ps, batches.attempt[b]))
        self._arm(ps, q)

    @staticmethod
    def _backoff_ms(ps: ProducerState, attempts: int) -> float:
        cfg = ps.config
        if ps.jitter is None:  # before 3.7: constant
            return max(cfg.retry_backoff_ms, 1.0)
        # RecordAccumulator.shouldBackoff: retryBackoff.backoff(attempts - 1)
        return max(exponential_backoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms, max(attempts - 1, 0),
                                       next(ps.jitter)), 1.0)

    def _fail(self, ps: ProducerState, b: int, error: int) -> None:
        if error == DELIVERY_TIMEOUT:  # (the other errors were counted by _retry)
            self.error_ms.append(self.kernel.now)
        batches = self.batches
        batches.state[b] = FAILED
        batches.error[b] = error
        p = batches.partition[b]
        if ps.config.enable_idempotence:
            self._bump_epoch(ps, p)  # KIP-360: a new epoch lets later batches past the gap
        if ps.pooled:
            self._completed(ps, b)

    # ---- metadata ---------------------------------------------------------------------------------------------

    def _request_metadata(self, ps: ProducerState) -> None:
        """Metadata.requestUpdate (clients.metadata: once retry.backoff.ms has passed since the last answer)."""
        self.metadata_updater.request_update(ps, ps.index)

    @staticmethod
    def _load(ps: ProducerState, now: float, b: int):
        """For NetworkClient.leastLoadedNode: None while backing off broker `b` or when its connection cannot take
        one more request (canSendRequest: max.in.flight.requests.per.connection), else its requests in flight."""
        conn = ps.conns[b]
        n = len(conn.inflight)
        return None if conn.backoff_until > now or n >= ps.config.max_in_flight else n

    def _skip_backoff(self, ps: ProducerState, q, leader: int, now: float) -> None:
        """3.7+ (KIP-951's client side): a resend whose partition now has another leader than the one its batch
        failed at goes without backoff (RecordAccumulator.shouldBackoff, ProducerBatch.hasLeaderChangedForTheOngoingRetry)."""
        if self.kip951 and leader >= 0 and ps.failed_at.get(q.p, leader) != leader:
            del ps.failed_at[q.p]
            if q.backoff_until > now:
                q.backoff_until = now

    def _answered(self, ps: ProducerState, leaders) -> bool:
        """A metadata answer (`leaders`: partition -> leader; None: none came): every partition takes the leader it
        names (a metadata response carries every partition of the producer's topics), those with data filed under
        another broker are filed again; partitions waiting for a leader are filed again; records and resends that
        waited past delivery.timeout.ms fail. True: it named another leader than the producer knew."""
        now = self.kernel.now
        cfg = ps.config
        acc = ps.acc
        waiting, ps.no_leader = ps.no_leader, set()
        moved = False  # another leader than the producer knew (for a waiting partition: the one its batch failed at)
        if leaders is not None:
            known = ps.metadata
            for p in waiting:
                moved = moved or (leaders[p] >= 0 and leaders[p] != ps.failed_at.get(p, -1))
            for p, leader in enumerate(leaders):
                if known[p] != leader and p not in waiting:
                    moved = True
                    known[p] = leader
                    q = acc.queues[p]
                    if q.node >= 0:
                        self._skip_backoff(ps, q, leader, now)
                        self._arm(ps, q)
        for p in sorted(waiting):
            q = acc.queues[p]
            if leaders is not None or ps.metadata[p] < 0:
                ps.metadata[p] = leaders[p] if leaders is not None else -1
                self._skip_backoff(ps, q, ps.metadata[p], now)
            while q.retry and now - self.times[self.batches.lo[q.retry[0]]] >= cfg.delivery_timeout_ms:
                self._fail(ps, q.retry.pop(0), DELIVERY_TIMEOUT)
            for b in acc.cut_expired(q, now, cfg.delivery_timeout_ms):
                self._fail(ps, b, DELIVERY_TIMEOUT)
            self._arm(ps, q)
        return moved  # (clients.metadata: an answer that moved no leader lengthens KIP-580's next backoff, 3.7+)
