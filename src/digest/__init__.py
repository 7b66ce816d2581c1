"""digest: saved links and feeds in, a dated weekly digest out."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("digest")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"
