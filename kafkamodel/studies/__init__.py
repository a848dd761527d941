"""The studies: one module per study, its figures, tables and headline, drawn from the aggregates; the explorer.

Each study module (named as its spec, ``data/studies/<study>.yaml``, and its notebook) exposes
``headline(agg) -> (numbers, finding)``; its other functions return figures or tables for the study's notebook
to show. ``common`` holds what every study's analysis uses; ``explorer`` the explorer and its panel. The
studies use the kit (``kafkamodel.kit``) through its public names.
"""
