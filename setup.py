"""The one build step pyproject.toml cannot say: copy what the commands read into the package.

The repository keeps ``data/`` (scenarios, study and campaign specs, the
campaigns' committed counterexamples) and ``notebooks/`` at its top; a wheel
(``pip install .``, ``make dist``) carries copies of them as
``kafkamodel/shipped/data/...`` and ``kafkamodel/shipped/notebooks/``, where
``kafkamodel.paths`` finds them when the package is not imported from a
checkout. Outputs (``data/runs``, ``data/processed``) are never copied. An
editable install reads the checkout itself and copies nothing.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("data/scenarios/*.yaml", "data/studies/*.yaml", "data/campaigns/*.yaml", "data/campaigns/*/*.yaml",
           "data/validation/*.yaml", "data/durability/*.yaml", "notebooks/*.ipynb")


class build_py_with_shipped(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        here = Path(__file__).resolve().parent
        for pattern in SHIPPED:
            for source in sorted(here.glob(pattern)):
                target = Path(self.build_lib) / "kafkamodel" / "shipped" / source.relative_to(here)
                self.mkpath(str(target.parent))
                self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": build_py_with_shipped})
