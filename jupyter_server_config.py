# JupyterLab configuration for this repository (`make lab` passes it with --config).
# The kit's numbered notebooks (notebooks/NN_*.ipynb) are stored without outputs: when you save one
# (or autosave does), Jupyter writes it clean, so running a notebook or its widget panel never leaves
# it modified in git. Outputs stay on screen until you close it; reports (`make study`) keep them.
c = get_config()  # noqa: F821 (traitlets provides it)
c.ContentsManager.pre_save_hook = "kafkamodel.kit.cleaning.pre_save_hook"
