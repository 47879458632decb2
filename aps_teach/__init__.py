"""aps-teach: unsupervised RL taught by building it — VISR, then APT, then APS (Liu & Abbeel, 2021).

The library the notebooks, command line and tests share. The environments live in the separate
`gridworld` package, which knows nothing of this one.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aps-teach")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
