"""The partition assignors the consumer group leader runs (classic protocol). The algorithms live in
``sim.rules.assignors`` (and ``sim.rules.sticky``), shared with the group coordinator, which runs them itself under
the consumer group protocol (KIP-848)."""

from ..rules.assignors import assign, range_assign, range_ceil_assign, roundrobin_assign, sticky_assign

__all__ = ["assign", "range_assign", "range_ceil_assign", "roundrobin_assign", "sticky_assign"]
