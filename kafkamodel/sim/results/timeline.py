"""The timeline: every ``timeline.interval.ms``, per partition, its leader, leader epoch, LEO, HW and ISR size
(the ``timeline`` table)."""

from __future__ import annotations


class Timeline:
    TIMERS = ("sample",)

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.brokers = sim.brokers
        self.partitions = sim.partitions
        self.replicas = sim.replicas
        self.interval = sim.settings.timeline_interval_ms
        self.rows: list[tuple] = []  # (time, topic, partition, leader, epoch, LEO, HW, ISR size)

    def start(self) -> None:
        self.kernel.schedule(0.0, self.sample)

    def sample(self) -> None:
        now = self.kernel.now
        add = self.rows.append
        up = [b.up for b in self.brokers]  # (a row per partition: what every row asks, looked up once)
        replicas = self.replicas
        for part in self.partitions:
            leader = part.leader
            if leader >= 0 and up[leader]:
                rep = replicas[part.index][leader]
                leo, hw = rep.log.log_end_offset, rep.high_watermark
            else:
                leo = hw = -1
            add((now, part.topic, part.number, leader, part.leader_epoch, leo, hw, len(part.isr)))
        self.kernel.schedule(now + self.interval, self.sample)
