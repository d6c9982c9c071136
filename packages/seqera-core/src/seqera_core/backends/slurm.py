"""Kept for one release: the slurm backend moved to :mod:`seqera_core.backends.batch.slurm`."""

from .batch.slurm import *  # noqa: F403
from .batch.slurm import __all__ as __all__
