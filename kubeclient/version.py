"""spacehub's own version: what ``spacehub --version`` prints, syncers report in heartbeats and each space's
``/version`` carries as build metadata (``v1.32.0+spacehub.0.1.0``: the Kubernetes API level stays what
clients compare)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def spacehub_version() -> str:
    try:
        return version("spacehub")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.0.0"
