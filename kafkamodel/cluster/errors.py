"""What the cluster commands cannot read: one line naming the file, the line and what was expected."""

from __future__ import annotations


class InputError(ValueError):
    """An input file the cluster commands cannot read (exit status 2, nothing written)."""

    def __init__(self, source: str, line: int | None, expected: str):
        self.source, self.line, self.expected = source, line, expected
        super().__init__(f"{source}{f':{line}' if line else ''}: {expected}")


class Origin(str):
    """Where a value was read: ``file:line`` (and what it said), written beside the value as a YAML comment."""


def at(source: str, line: int, what: str = "") -> Origin:
    return Origin(f"{source}:{line}" + (f" {what}" if what else ""))
