"""broker.cpu: the broker machine's cores and GC on their own.

Each expectation is computed here from the part's numbers and the JVM's documented rule."""

from itertools import repeat

import pytest

from kafkamodel.sim.broker.cpu import Cpu
from kafkamodel.sim.storage.disk import MIB


def test_cores_bound_the_work_that_runs_at_once():
    class Clock:
        now = 0.0
    cpu = Cpu(Clock(), brokers=1, cores=2, young_mib=0, request_kib=0, pause_draws=repeat(10.0))
    ends = [cpu.run(0, 0.0, 1.0) for _ in range(4)]
    assert ends == [1.0, 1.0, 2.0, 2.0]  # four 1 ms pieces of work ready at once on two cores
    assert cpu.busy_ms[0] == 4.0


def test_a_young_collection_every_young_generation_allocated_stops_every_thread():
    class Clock:
        now = 0.0
    clock = Clock()
    cpu = Cpu(clock, brokers=1, cores=4, young_mib=100, request_kib=0, pause_draws=repeat(20.0))
    rate = 300 * MIB  # bytes allocated per second
    for ms in range(10000):  # 10 s of 300 MiB/s allocated in 1 ms steps
        clock.now = float(ms)
        cpu.allocate(0, rate / 1000)
    # G1: a young collection each time eden (100 MiB) fills: 3 per second, 20 ms each
    assert cpu.pauses[0] == int(10 * 300 / 100) - 1 or cpu.pauses[0] == int(10 * 300 / 100)
    assert cpu.pause_ms[0] / 10 == pytest.approx(300 / 100 * 20, rel=0.05)
    clock.now = cpu.paused_until[0] - 5.0  # work ready during a pause starts when it ends
    assert cpu.run(0, clock.now, 1.0) == cpu.paused_until[0] + 1.0
