"""The common resource request and response, in canonical units."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import field, frozen

from .errors import ResourceError

__all__ = [
    "Accelerator",
    "ResourceLimits",
    "ResourceRequest",
    "ResourceResponse",
    "Submission",
    "Translation",
]


def _number(value: Any) -> Any:
    # cpus stay a number; an integral float (2.0) is stored as int so that
    # 2 and 2.0 compare, hash and print the same.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _positive_cpus(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        # math.isfinite would raise for an int past a float (10**400): ints are finite
        or (isinstance(value, float) and not math.isfinite(value))
        or value <= 0
    ):
        raise ResourceError(attribute.name, value, "a number of cores greater than 0")


def _whole(minimum: int, what: str) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ResourceError(attribute.name, value, f"{what} (an integer >= {minimum})")

    return check


def string_map(value: Mapping[str, Any] | None) -> dict[str, str]:
    """A plain dict of strings (labels, environments); values are coerced with ``str``."""
    return {} if value is None else {str(k): str(v) for k, v in value.items()}


@frozen
class Accelerator:
    """Accelerators (GPUs) a task needs: how many, and optionally which type."""

    count: int = field(validator=_whole(1, "a number of accelerators"))
    type: str | None = None


@frozen
class ResourceLimits:
    """Upper bounds that cap a request (Nextflow's ``resourceLimits``)."""

    cpus: float | None = field(default=None, converter=_number, validator=_positive_cpus)
    memory: int | None = field(default=None, validator=_whole(1, "bytes"))
    disk: int | None = field(default=None, validator=_whole(1, "bytes"))
    time: int | None = field(default=None, validator=_whole(1, "seconds"))


@frozen
class ResourceRequest:
    """What a task declared, in canonical units: bytes, seconds, cores.

    ``None`` means the engine did not declare the value. ``cpus`` are per task and
    ``memory`` per node (Slurm's ``--cpus-per-task`` and ``--mem``): a multi-task (MPI)
    job has ``tasks`` tasks over ``nodes`` nodes (or ``tasks_per_node`` on each), and
    ``memory_per_cpu`` (when given) replaces ``memory`` as the scheduler's memory
    request, as Slurm's ``--mem-per-cpu`` replaces ``--mem``;
    ``mpi`` names the launcher the job's command uses (``srun``, ``mpiexec``), so squashing
    and arrays leave such a job alone. ``extra`` carries
    scheduler-specific pass-through options with a prefix (``slurm.qos``); ``self_sizing``
    marks a tool whose peak follows its memory allocation.
    """

    cpus: float | None = field(default=None, converter=_number, validator=_positive_cpus)
    memory: int | None = field(default=None, validator=_whole(1, "bytes"))
    disk: int | None = field(default=None, validator=_whole(1, "bytes"))
    time: int | None = field(default=None, validator=_whole(1, "seconds"))
    accelerator: Accelerator | None = None
    machine_type: str | None = None
    resource_limits: ResourceLimits | None = None
    container: str | None = None
    process: str | None = None
    attempt: int = field(default=1, validator=_whole(1, "an attempt number"))
    task_index: int | None = field(default=None, validator=_whole(0, "a task index"))
    input_bytes: int | None = field(default=None, validator=_whole(0, "bytes"))
    queue: str | None = None
    account: str | None = None
    labels: Mapping[str, str] = field(factory=dict, converter=string_map, hash=False)
    extra: Mapping[str, str] = field(factory=dict, converter=string_map, hash=False)
    # The tool sizes itself from its memory allocation (a JVM's -Xmx from it, sort -S):
    # a right-sizer never gives it less than declared (seqera_core.sizing._guard).
    self_sizing: bool = field(default=False, validator=attrs.validators.instance_of(bool))
    # Multi-task jobs (snakemake-executor-plugin-slurm's tasks/nodes/tasks_per_node/mpi,
    # cwltool:MPIRequirement's processes). None: one task on one node.
    nodes: int | None = field(default=None, validator=_whole(1, "a number of nodes"))
    tasks: int | None = field(default=None, validator=_whole(1, "a number of tasks"))
    tasks_per_node: int | None = field(
        default=None, validator=_whole(1, "a number of tasks per node")
    )
    memory_per_cpu: int | None = field(default=None, validator=_whole(1, "bytes"))
    mpi: str | None = None

    @property
    def multi_task(self) -> bool:
        """More than one task or node, or an MPI launcher: never an array element or a
        squashed allocation's slot."""
        counts = (self.tasks, self.nodes, self.tasks_per_node)
        return any((n or 1) > 1 for n in counts) or bool(self.mpi)

    @property
    def node_tasks(self) -> int:
        """Tasks on the busiest node: what one machine runs (local, ECS) for this job."""
        if self.tasks_per_node is not None:
            return self.tasks_per_node
        return -(-(self.tasks or 1) // (self.nodes or 1))

    def on_one_machine(self, backend: str) -> ResourceRequest:
        """The request as one machine runs it (the local backend, ECS): every task's cores
        together, memory per CPU times those cores. Refuses more than one node, naming it."""
        if (self.nodes or 1) > 1:
            raise ResourceError(
                "nodes", self.nodes, f"1: the {backend} backend runs a job on one machine"
            )
        if not self.multi_task and self.memory_per_cpu is None:
            return self
        cpus = (
            None
            if self.cpus is None and not self.multi_task
            else (self.cpus or 1) * self.node_tasks
        )
        memory = self.memory
        if self.memory_per_cpu is not None:
            memory = self.memory_per_cpu * math.ceil(cpus or 1)
        return attrs.evolve(self, cpus=cpus, memory=memory, memory_per_cpu=None, tasks=None,
                            tasks_per_node=None, nodes=None)  # fmt: skip


@frozen
class ResourceResponse:
    """Effective resources for a task; every value is populated."""

    cpus: float = field(converter=_number, validator=_positive_cpus)
    memory: int = field(validator=_whole(1, "bytes"))
    disk: int = field(validator=_whole(1, "bytes"))
    time: int = field(validator=_whole(1, "seconds"))


@frozen
class Submission:
    """What a backend would receive for a request: arguments, native values, and notes."""

    backend: str
    args: tuple[str, ...] = ()
    native: Mapping[str, Any] = field(factory=dict, hash=False)
    notes: tuple[str, ...] = ()


@frozen
class Translation:
    """A request built from an engine's resources, and the engine keys it did not read."""

    request: ResourceRequest
    ignored: tuple[str, ...] = ()
