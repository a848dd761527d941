"""Storage: a replica's log (entries, epochs, segments, flush, retention)."""
