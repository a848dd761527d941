"""One module per study: its figures, tables and headline, drawn from the aggregates.

Each module exposes ``headline(agg) -> (numbers, finding)``; its other
functions return figures or tables for the study's notebook to show.
"""
