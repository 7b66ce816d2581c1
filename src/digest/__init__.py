"""digest: saved links and feeds in, a dated weekly digest out."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # importlib.metadata costs a tenth of a second: read the version only when asked
    if name != "__version__":
        raise AttributeError(f"module 'digest' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("digest")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"
