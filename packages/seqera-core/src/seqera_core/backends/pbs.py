"""Kept for one release: the pbs backend moved to :mod:`seqera_core.backends.batch.pbs`."""

from .batch.pbs import *  # noqa: F403
from .batch.pbs import __all__ as __all__
