"""The engine: the event heap (``kernel``), messages over connections (``transport``), the layout (``network``)."""
