"""The controller: liveness and metadata (``controller``), partition changes and elections (``elections``),
replica placement (``placement``)."""
