"""The leader's side of follower fetches: fetch sessions (KIP-227) and long polls (DelayedFetch).

A follower broker's replica fetcher keeps one session at each leader broker
it fetches from. A fetch request carries only the partitions whose fetch
offset changed (and the ones it added or dropped); the leader keeps the
others' offsets from before. For each partition in the request the leader
learns the follower's LEO (the offset it asks for), updates when it was last
caught up, advances the HW or lets it back into the ISR. The answer carries
the partitions with something new: records beyond the follower's offset (up
to ``replica.fetch.max.bytes`` each and ``replica.fetch.response.max.bytes``
in all, the first batch always), a new HW, or an error. With fewer than
``replica.fetch.min.bytes`` of records to give, the fetch waits (up to
``replica.fetch.wait.max.ms``) until an append brings them. So work follows
what changed, not how many partitions a session holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter

from ..protocol import LOG_START_MOVED, NONE, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE
from ..state import Replica

_by_key = attrgetter("key")


class FetchSession:
    """A follower fetcher's session at one leader broker."""

    __slots__ = ("key", "leader", "follower", "offsets", "dirty", "hw_sent", "parked", "parked_at", "timer_armed",
                 "last_fetch_ms", "errors", "retry_expand", "woken_for")

    def __init__(self, key: tuple, leader: int, follower: int):
        self.key = key  # (leader, follower, fetcher id)
        self.leader = leader
        self.follower = follower
        self.offsets: dict[int, int] = {}  # partition -> the fetch offset the follower last reported
        self.dirty: dict[int, bool] = {}  # partitions to read at the next answer (records beyond the offset, new HW)
        self.hw_sent: dict[int, int] = {}  # partition -> the HW last sent to the follower
        self.parked = 0  # the request id of a fetch waiting for records (0: none)
        self.parked_at = 0.0
        self.timer_armed = False
        self.last_fetch_ms = 0.0  # when the follower last fetched (every partition of the session is read then)
        self.errors: list = []  # errors for the next answer (protocol.FETCH_RESPONSE_PARTITION)
        self.retry_expand: set[int] = set()  # partitions whose ISR expansion the controller refused (fenced, RECOVERING)
        # the parked fetch an append gave records to (``appended``; 0: none, or a partition left the session since)
        self.woken_for = 0


class SessionManager:
    """Every leader broker's fetch sessions (Kafka's FetchManager, and ReplicaManager.fetchMessages for followers)."""

    MESSAGES = ("handle_fetch",)  # through the server
    TIMERS = ("_wait_expired",)

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.timer = sim.transport.timer
        self.replicas = sim.replicas
        self.batches = sim.batches
        self.counters = sim.recorder.counters
        cfg = sim.settings.broker
        self.wait_ms = cfg.replica_fetch_wait_max_ms
        self.min_bytes = cfg.replica_fetch_min_bytes
        self.partition_max_bytes = cfg.replica_fetch_max_bytes
        self.response_max_bytes = cfg.replica_fetch_response_max_bytes
        costs = sim.settings.costs
        self.read_partition_ms = costs.partition_us / 1000.0  # a handler thread reading one partition
        self.read_byte_ms = costs.kib_us / 1024.0 / 1000.0
        self.cpu_run = sim.cpu.run  # the leader machine's cores
        self.caches = sim.caches  # broker -> its page cache and disk
        self.sessions: dict[tuple, FetchSession] = {}
        self.quotas = sim.quotas  # replication throttles (KIP-73): what a moving replica may get
        self.server = None  # wired
        self.respond = self.follower_handle_response = None  # wired: the server's responses, where answers go
        self.fetch_counts = sim.mode.fetch_counts  # does a follower's fetch move the HW (else it may rejoin the ISR)?
        # the HW is the ISR's minimum LEO (a fetch at or below it cannot move it) and fetch_counts is ISR membership
        self.hw_is_isr_minimum: bool = sim.mode.hw_is_isr_minimum
        self.hw_news = sim.settings.kafka.hw_ends_follower_long_poll  # 2.4-2.5: a stale HW answers a fetch at once
        self.leader_advance_high_watermark = self.leader_expand_isr = None  # wired: the leader's

    def wire(self, server, leader, follower) -> None:
        self.server = server
        self.respond, self.follower_handle_response = server.respond, follower.handle_response
        self.leader_advance_high_watermark = leader.leader_advance_high_watermark
        self.leader_expand_isr = leader.leader_expand_isr

    # ---- fetch requests --------------------------------------------------------------------------------------------

    def handle_fetch(self, key: tuple, req: int, entries: list, forgotten: Sequence[int], full: bool) -> None:
        """A follower's fetch request, read by a handler thread of the leader: each partition whose offset changed
        (protocol.FETCH_PARTITION), partitions it no longer fetches here, or the whole set (`full`)."""
        ready = self.server.departure
        leader, follower, _ = key
        s = self.sessions.get(key)
        if s is None or full:
            if s is not None:
                self._drop(s, list(s.offsets))
            s = self.sessions[key] = FetchSession(key, leader, follower)
        now = self.kernel.now
        s.last_fetch_ms = now
        if forgotten:
            self._drop(s, forgotten)
        replicas, dirty, offsets, hw_sent = self.replicas, s.dirty, s.offsets, s.hw_sent
        fetch_counts, advance, expand = self.fetch_counts, self.leader_advance_high_watermark, self.leader_expand_isr
        isr_minimum = self.hw_is_isr_minimum
        retry = s.retry_expand  # refused expansions to ask again (below)
        if retry:
            s.retry_expand = set()
        throttled = self.quotas.throttled  # replication throttles set (operations: reassign)
        data = False  # some partition of the request has records beyond its offset
        news = False  # 2.4-2.5 (followerNeedsHwUpdate): some partition has a HW the follower lacks
        for p, offset, epoch in entries:
            rep = replicas[p][leader]
            log = rep.log
            leo = log.log_end_offset
            if offset > leo or offset < log.log_start_offset or not rep.is_leader or epoch != rep.leader_epoch:
                self._refuse(s, rep, offset, epoch)
                continue
            offsets[p] = offset
            lead = rep.lead
            lead.sessions[follower] = s
            # Kafka's Partition.updateFollowerFetchState: the follower's LEO is the offset it asks for; when it was
            # last caught up moves (at this fetch if it has everything; at its previous read if it has what was
            # there then); the HW may advance, or the follower rejoin the ISR (inline: it runs at every fetch)
            fs = lead.followers.get(follower)
            if fs is None:
                fs = lead.follower(follower)
            if offset >= leo:
                fs.last_caught_up_ms = now
            elif offset >= fs.last_fetch_leader_leo:
                last = fs.last_fetch_ms
                if last > fs.last_caught_up_ms:
                    fs.last_caught_up_ms = last
            fs.last_fetch_ms = now
            fs.last_fetch_leader_leo = leo
            fs.log_end_offset = offset
            if isr_minimum:  # (the ISR's rule, Kafka's: fetch_counts is ISR membership)
                if follower in lead.isr:
                    # the HW is the ISR's minimum LEO: it moves only when every ISR follower (this one included) and
                    # the leader are past it; else new_high_watermark would give the HW back (a fetch's usual case)
                    hw = rep.high_watermark
                    if offset > hw:
                        for other in lead.isr_followers:
                            if other.log_end_offset <= hw:
                                break
                        else:
                            advance(rep)
                elif offset >= rep.high_watermark and offset >= lead.epoch_start_offset:
                    expand(rep, follower)
            elif fetch_counts(rep, follower):
                advance(rep)
            elif offset >= rep.high_watermark and offset >= lead.epoch_start_offset:
                expand(rep, follower)
            if leo > offset:
                if throttled and self._held(p, leader, follower, lead):
                    dirty[p] = True  # throttled, its allowance spent: not data that answers the fetch before its wait
                else:
                    dirty[p] = data = True
            elif hw_sent.get(p) != rep.high_watermark:
                dirty[p] = True
                news = self.hw_news
            else:
                dirty.pop(p, None)
        if retry:  # Kafka's updateFollowerFetchState runs for every partition of the session at each fetch
            self._retry_expand(s, retry.difference(p for p, _, _ in entries))
        min_bytes = self.min_bytes
        if s.errors or news or min_bytes <= 0 or (min_bytes == 1 and data) or (s.dirty and self._has_bytes(s)):
            self._answer(s, req, ready)  # (nothing dirty: no records to count)
        else:
            s.parked, s.parked_at = req, now
            if not s.timer_armed:
                s.timer_armed = True
                self.timer(leader, self.wait_ms, self._wait_expired, s)

    def _refuse(self, s: FetchSession, rep: Replica, offset: int, epoch: int) -> None:
        """The partition is left out of the session, with the error its next answer carries."""
        p, log = rep.partition, rep.log
        self._drop(s, [p])
        if not rep.is_leader or epoch != rep.leader_epoch:  # NOT_LEADER / FENCED_LEADER_EPOCH
            s.errors.append((p, NOT_LEADER_OR_FOLLOWER, -1, (), -1, -1))
        elif offset > log.log_end_offset:  # OFFSET_OUT_OF_RANGE: the follower has more than we do
            s.errors.append((p, OFFSET_OUT_OF_RANGE, -1, (), -1, log.log_end_offset))
        else:  # below the log start: retention deleted what it needs
            s.errors.append((p, LOG_START_MOVED, -1, (), log.log_start_offset, -1))

    def _retry_expand(self, s: FetchSession, retry: set) -> None:
        """A caught-up follower whose ISR expansion was refused asks again at its next fetch, even one that does not
        name the partition (an incremental fetch leaves out partitions without news)."""
        for p in sorted(retry):
            rep = self.replicas[p][s.leader]
            offset = s.offsets.get(p)
            if rep.is_leader and offset is not None and s.follower not in rep.lead.isr \
                    and offset >= rep.high_watermark and offset >= rep.lead.epoch_start_offset:
                self.leader_expand_isr(rep, s.follower)

    def _held(self, p: int, leader: int, follower: int, lead) -> bool:
        """Throttled, and its allowance spent: the partition gives nothing now (quotas: KIP-73)."""
        allowance = self.quotas.allowance(p, leader, follower, lead.isr)
        return allowance is not None and allowance <= 0

    def _has_bytes(self, s: FetchSession) -> bool:
        """Are there replica.fetch.min.bytes of records to give (1 by default: any)?"""
        need = self.min_bytes
        if need <= 0:
            return True
        got = 0
        throttled = self.quotas.throttled
        for p in s.dirty:
            rep = self.replicas[p][s.leader]
            if throttled and self._held(p, s.leader, s.follower, rep.lead):
                continue
            log = rep.log
            offset, leo = s.offsets[p], log.log_end_offset
            if leo <= offset:
                continue
            if need <= 1:
                return True
            # a read capped at what is still missing: it stops short of the log's end only at a batch that
            # would pass the cap, so there is enough if it stops short or its bytes reach the cap
            _, end, size = log.read(offset, leo, need - got, False)
            got += size
            if got >= need or end < log.rows:
                return True
        return False

    def _drop(self, s: FetchSession, parts: list) -> None:
        replicas, leader, follower = self.replicas, s.leader, s.follower
        s.woken_for = 0  # what an append gave a parked fetch may be gone with these partitions
        for p in parts:
            if s.offsets.pop(p, None) is not None:
                lead = replicas[p][leader].lead
                if lead is not None and lead.sessions.get(follower) is s:
                    del lead.sessions[follower]
            s.dirty.pop(p, None)
            s.hw_sent.pop(p, None)

    # ---- answers ---------------------------------------------------------------------------------------------------

    def _answer(self, s: FetchSession, req: int, ready: float) -> None:
        """The fetch response: the partitions with something new, in session order (those that got records
        move to the end, for fairness under the byte limits)."""
        s.parked = 0
        now = self.kernel.now
        leader, follower = s.leader, s.follower
        replicas = self.replicas
        dirty, offsets, hw_sent = s.dirty, s.offsets, s.hw_sent
        parts, s.errors = s.errors, []
        budget, partition_max = self.response_max_bytes, self.partition_max_bytes
        total = uncached = 0
        cache = self.caches[leader]
        # what was written before this has left the page cache (none of it while less than the cache was written)
        cut = cache.cold_before if cache.written <= cache.capacity else cache.evicted_before()
        again = []
        quotas = self.quotas if self.quotas.throttled else None
        allowance = None
        for p in list(dirty):
            rep = replicas[p][leader]
            log = rep.log
            leo = log.log_end_offset
            offset = offsets[p]
            if quotas is not None:
                allowance = quotas.allowance(p, leader, follower, rep.lead.isr)
                if allowance is not None and allowance <= 0:
                    continue  # throttled and spent: left out of this response
            if leo > offset and (budget > 0 or not total):
                cap = budget if budget < partition_max else partition_max
                n = log.rows
                bases = log.bases
                if allowance is None and n:
                    # Log.read to the LEO, without the call (every row's base is below the LEO): whole batches from
                    # the one at the offset (usually one of the last two: found without a search) while their bytes
                    # stay within the cap, the response's first batch even past it
                    if bases[n - 1] == offset:
                        i = n - 1
                    elif n > 1 and bases[n - 2] == offset:
                        i = n - 2
                    else:
                        i = log.entry_index(offset)
                    ids, bytes_of = log.batch_ids, log.batch_bytes
                    j, size = i, 0
                    while j < n:
                        b = ids[j]
                        if b >= 0:
                            grown = size + bytes_of[b]
                            if grown > cap and (j > i or total):
                                break
                            size = grown
                        j += 1
                else:
                    if allowance is not None and allowance < cap:
                        cap = int(allowance) or 1
                    i, j, size = log.read(offset, leo, cap, not total)
                    if allowance is not None:
                        quotas.took(p, leader, follower, size, rep.lead.isr)
                lead = rep.lead
                fs = lead.followers.get(follower)
                if fs is None:
                    fs = lead.follower(follower)
                fs.last_fetch_leader_leo = leo
                fs.last_fetch_ms = now
                if j > i:  # records (and the HW): the partition goes to the end of the session's order (below)
                    if size:
                        total += size
                        budget -= size
                        if log.instants[log.append_at[i - log.forgotten]] < cut:  # (row i: kept)
                            uncached += log.bytes_written_before(i, j, cut)
                    hw_sent[p] = hw = rep.high_watermark
                    if j == i + 1:  # one batch as its fields, the usual answer (Log.chunk's, without the call)
                        parts.append((p, NONE, hw, (bases[i], log.leader_epochs[-1] if log.epoch_rows[-1] <= i
                                                    else log.epoch_at(i), log.batch_ids[i],
                                                    leo if j == n else bases[j]), -1, -1))
                    else:  # several as slices
                        parts.append((p, NONE, hw, log.chunk(i, j), -1, -1))
                    again.append(p)
                    continue
            hw = rep.high_watermark
            if hw != hw_sent.get(p):  # no records: the HW alone, if the follower lacks it
                hw_sent[p] = hw
                parts.append((p, NONE, hw, (), -1, -1))
            if leo <= offset:
                del dirty[p]
        if len(again) < len(dirty):  # records handed out: to the end of the session's order (if others remain)
            for p in again:
                del dirty[p]
                dirty[p] = True
        given = len(parts)
        self.counters.fetch_partitions += given
        extra = self.read_partition_ms * given + self.read_byte_ms * total
        ready = ready if ready > now else now
        if extra > 0.0:
            ready = self.cpu_run(leader, ready, extra)
        if total:  # the records go out from the page cache, or from the disk once read
            cache.read_bytes += total
            if uncached:
                there = cache.read(now, uncached)
                if there > ready:
                    ready = there
        self.respond(leader, ready, follower, self.follower_handle_response, (s.key, req, parts), total, True)

    def _wait_expired(self, s: FetchSession) -> None:
        if self.sessions.get(s.key) is not s:
            return
        if not s.parked:
            s.timer_armed = False
            return
        due = s.parked_at + self.wait_ms
        now = self.kernel.now
        if now + 1e-9 < due:  # parked again since the timer was set
            self.timer(s.leader, due - now, self._wait_expired, s)
            return
        s.timer_armed = False
        self._answer(s, s.parked, now)

    # ---- what wakes a session ------------------------------------------------------------------------------------

    def appended(self, rep: Replica, old: int, woken: set) -> None:
        """The leader appended to the partition at offset `old` (its LEO before): its followers' sessions have
        records to give; the parked ones go into `woken`, to be answered once the produce request is handled
        (``wake``)."""
        p = rep.partition
        for s in rep.lead.sessions.values():
            dirty = s.dirty
            if p not in dirty:  # (a session already to read it, the usual case under load, changes nothing)
                if s.offsets.get(p, -1) >= old:  # it had everything before this append: caught up until now
                    fs = rep.lead.followers[s.follower]  # (the session's follower: its key in lead.sessions)
                    if s.last_fetch_ms > fs.last_caught_up_ms:
                        fs.last_caught_up_ms = s.last_fetch_ms
                dirty[p] = True
            if s.parked:
                s.woken_for = s.parked  # this append gave it records (every offset a session holds is at most `old`)
                woken.add(s)

    def wake(self, woken: set) -> None:
        """After a produce request (tryCompleteActions): parked fetches that now find enough are answered. A fetch
        still parked as it was when an append gave it records (``woken_for``) has at least a byte: with
        replica.fetch.min.bytes at most 1 and no throttle that is enough, without counting."""
        now = self.kernel.now
        counted = self.min_bytes > 1 or self.quotas.throttled
        order: Iterable[FetchSession] = woken
        if len(woken) == 2:  # in session order (the usual two followers: one comparison, no sort)
            a, b = woken
            order = (a, b) if a.key < b.key else (b, a)
        elif len(woken) > 2:
            order = sorted(woken, key=_by_key)
        for s in order:
            req = s.parked
            if req and self.sessions.get(s.key) is s and (
                    (s.woken_for == req and not counted) or self._has_bytes(s)):
                self._answer(s, req, now)

    def hw_moved(self, lead) -> None:
        """2.4-2.5 (KIP-392's Case H, removed by KAFKA-9952 in 2.6): the HW moved; the partition's followers' parked
        fetches are answered now with it."""
        now = self.kernel.now
        for s in list(lead.sessions.values()):
            if s.parked and self.sessions.get(s.key) is s:
                self._answer(s, s.parked, now)

    def resigned(self, rep: Replica) -> None:
        """The replica stopped leading: it leaves its followers' sessions here."""
        p = rep.partition
        for s in list(rep.lead.sessions.values()):
            self._drop(s, [p])

    def drop_broker(self, b: int) -> None:
        """Broker b's process died: the sessions it held as leader are gone."""
        for key in [k for k in self.sessions if k[0] == b]:
            del self.sessions[key]
