"""Results: what is measured (``measures``), the result built from the end state (``outcome``, ``result``), and the
safety properties (``invariants``)."""
