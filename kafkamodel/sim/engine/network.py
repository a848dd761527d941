"""The cluster's layout on the network: nodes, racks, and the latency of each link.

Nodes are the brokers (0..n-1), the clients (``CLIENT``, -1: producers and
consumers with no ``client.rack``), ZooKeeper / the metadata quorum
(``CONTROLLER``, -2), and one node per rack that clients run in (-3, -4, ...
in order of first mention), so a client's messages take its rack's links.

``network.latency.ms`` is every link's latency; ``network.links`` overrides
it for the links whose two ends match an entry (a broker id, ``rack:NAME``
for the brokers and clients in that rack, ``clients``, or ``*``), either
way round; a later entry wins. Each entry draws from a random stream of its
own (``network.links[i]``, and ``network.links[i].consumers`` on the
consumers' connections), so the links it does not cover keep their draws.
"""

from __future__ import annotations

from ...config.distributions import Sampler
from ..protocol import CLIENT, CONSUMER_CONN, CONTROLLER, DATA_CONN


class Layout:
    """Node ids and racks; which latency each (src, dst) pair draws from."""

    def __init__(self, settings):
        self.brokers = settings.brokers
        self.racks = settings.racks  # broker -> rack ("" without racks)
        client_racks = list(dict.fromkeys(c.client_rack for c in (*settings.producers, *settings.consumers)
                                          if c.client_rack))
        self.client_rack_node = {rack: -3 - j for j, rack in enumerate(client_racks)}
        self.offset = 2 + len(client_racks)  # node id + offset is a node's index in per-node tables
        self.nodes = list(range(-self.offset, self.brokers))  # every node id, by index

    @property
    def size(self) -> int:
        return len(self.nodes)

    def client_node(self, rack: str | None) -> int:
        return CLIENT if rack is None else self.client_rack_node[rack]

    def client_nodes(self) -> list[int]:
        return [CLIENT, *self.client_rack_node.values()]

    def rack_of(self, node: int) -> str | None:
        if node >= 0:
            return self.racks[node] if self.racks else None
        for rack, n in self.client_rack_node.items():
            if n == node:
                return rack
        return None

    def matches(self, end, node: int) -> bool:
        """Does a link end (a broker id, rack:NAME, clients or *) name this node?"""
        if end == "*":
            return True
        if isinstance(end, int):
            return node == end
        if end == "clients":
            return node == CLIENT or node in self.client_rack_node.values()
        return node != CONTROLLER and self.rack_of(node) == end[5:]

    def link_of(self, links: tuple, a: int, b: int) -> int:
        """The index of the last network.links entry covering the pair a-b (-1: the default latency)."""
        found = -1
        for i, ((x, y), _) in enumerate(links):
            if (self.matches(x, a) and self.matches(y, b)) or (self.matches(x, b) and self.matches(y, a)):
                found = i
        return found


def latency_streams(layout: Layout, settings, streams, defaults: tuple) -> tuple:
    """Per kind of connection, a [src index][dst index] table of latency iterators (``next`` gives a draw);
    `defaults` are the Samplers of network.latency.ms per kind of connection."""
    tables = []
    for conn, suffix in ((DATA_CONN, ""), (CONSUMER_CONN, ".consumers")):
        default = defaults[conn].stream
        by_link = {}
        table = []
        for a in layout.nodes:
            row = []
            for b in layout.nodes:
                i = layout.link_of(settings.links, a, b) if settings.links else -1
                if i < 0:
                    row.append(default)
                else:
                    if i not in by_link:
                        by_link[i] = Sampler(settings.links[i][1], streams(f"network.links[{i}]{suffix}")).stream
                    row.append(by_link[i])
            table.append(row)
        tables.append(table)
    return tuple(tables)
