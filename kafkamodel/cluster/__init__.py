"""Your cluster in the kit (issue 37): read the files an operator already has into a scenario (``import``), fit
the costs a hardware profile leaves uncertain to the operator's own measurements (``calibrate``), and answer the
operator's questions about that cluster in one offline report (``report``). docs/your-cluster.md."""
