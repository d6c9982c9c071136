"""seqera-sidecar: resource resolution and weblog-fed task history for Nextflow."""

from ._version import __version__
from .app import create_app
from .weblog import WeblogEvent, parse_event

__all__ = ["WeblogEvent", "__version__", "create_app", "parse_event"]
