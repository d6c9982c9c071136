"""The cost-aware instance planner: jobs packed onto cloud instance types.

``schedule`` packs jobs onto the catalogue's types (``_planner`` with its fill, loop and
type-choice steps, ``_lpbound`` the linear-programming lower bound, ``_mintree`` the
packing index); ``catalogue`` reads instance catalogues and ``jobsfile`` the JOBS.json a
user hands ``seqera plan``.
"""

from . import catalogue, jobsfile
from ._planner import (
    Instance,
    Job,
    LowerBound,
    Plan,
    check_cpus,
    lower_bound,
    millicores,
    required_type,
    schedule,
)
from .catalogue import Catalogue, InstanceType

__all__ = [
    "Catalogue",
    "Instance",
    "InstanceType",
    "Job",
    "LowerBound",
    "Plan",
    "catalogue",
    "check_cpus",
    "jobsfile",
    "lower_bound",
    "millicores",
    "required_type",
    "schedule",
]
