"""Build hook: the wheel ships the committed results (results/**/*.csv, .json, .png) as package data
aps_teach/results/, so notebooks find them on Colab with no repository (aps_teach.course.committed_result).
results/ itself stays at the top of the repository; everything else is configured in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RESULT_SUFFIXES = {".csv", ".json", ".png"}


class BuildPyWithResults(build_py):
    """build_py, then copy results/ into the built package (not for editable installs: they read the
    checkout's results/)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        source = Path(__file__).resolve().parent / "results"
        target = Path(self.build_lib) / "aps_teach" / "results"
        for path in sorted(source.rglob("*")):
            if path.is_file() and path.suffix in RESULT_SUFFIXES:
                destination = target / path.relative_to(source)
                self.mkpath(str(destination.parent))
                self.copy_file(str(path), str(destination))


setup(cmdclass={"build_py": BuildPyWithResults})
