"""``snakemake --executor seqera``: Snakemake jobs onto local, Slurm, PBS or ECS via seqera-core."""

from .executor import Executor
from .settings import ExecutorSettings, common_settings

__version__ = "0.1.0"

__all__ = ["Executor", "ExecutorSettings", "common_settings"]
