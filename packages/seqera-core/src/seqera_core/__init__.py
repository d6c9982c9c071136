"""seqera-core: one resource request for every workflow engine, scheduler and cloud."""

from .errors import ResourceError, SeqeraError, UsageError, WireError
from .models import Accelerator, ResourceLimits, ResourceRequest, ResourceResponse, Submission
from .platforms._limits import Capped, apply_limits

__version__ = "0.1.0"

__all__ = [
    "Accelerator",
    "Capped",
    "ResourceError",
    "ResourceLimits",
    "ResourceRequest",
    "ResourceResponse",
    "SeqeraError",
    "Submission",
    "UsageError",
    "WireError",
    "apply_limits",
]
