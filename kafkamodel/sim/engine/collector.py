"""Python's cyclic garbage collector, paused while the model builds what it keeps.

A phase that builds many objects that live on and frees none (the cluster's
state at the start; the result's tables at the end) pays for collections
that find nothing, each rescanning what was built so far: a
100,000-partition cluster spent nine tenths of its construction (2.6 of 2.9
CPU-seconds for its 300,000 replicas and logs) in them. Such phases run
with the collector off. So does the event loop: its garbage (messages,
answers, heap entries) is freed by reference counting as it goes, and it
makes no reference cycles (every shipped scenario: ``tests/test_scale.py``),
so a collection during it finds nothing and only rescans the cluster's state
(many-partitions spent about a tenth of its CPU time in them). Whatever a run
leaves behind is collected once the collector is back on.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def collector_paused():
    """The collector off for the block (or the decorated call), then back as it was."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
