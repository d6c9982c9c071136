"""This package's own backends, as registered under the entry-point group ``seqera.backends``.

Each is a :class:`~seqera_core.backends.registry.BackendEntry`: a name, where the
backend's class lives (imported only when a run opens it: ECS brings boto3) and what kind
of dispatcher it is. A third-party backend registers one of its own the same way, in its
``pyproject.toml``::

    [project.entry-points."seqera.backends"]
    mysched = "mysched_seqera:ENTRY"
"""

from __future__ import annotations

from .registry import BackendEntry

__all__ = ["AWSBATCH", "ECS", "LOCAL", "LSF", "PBS", "ROUTE", "SGE", "SLURM", "TORQUE"]

_D = "seqera_core.dialects."
_B = "seqera_core.backends."

LOCAL = BackendEntry("local", f"{_B}local._backend", "LocalBackend", section="local",
                     dialect=f"{_D}local:submission", forks=True, readopts=True)  # fmt: skip
SLURM = BackendEntry("slurm", f"{_B}batch.slurm", "SlurmBackend", batch=True, section="slurm",
                     dialect=f"{_D}slurm:submission")  # fmt: skip
PBS = BackendEntry("pbs", f"{_B}batch.pbs", "PbsBackend", batch=True,
                   fixed={"dialect": "pro"}, dialect=f"{_D}pbs:pro_submission")  # fmt: skip
TORQUE = BackendEntry("torque", f"{_B}batch.pbs", "PbsBackend", batch=True,
                      fixed={"dialect": "torque"},
                      dialect=f"{_D}pbs:torque_submission")  # fmt: skip
# section: the sge.* config keys (memory, pe, gpu) are the backend's keywords
SGE = BackendEntry("sge", f"{_B}batch.sge", "SgeBackend", batch=True, section="sge",
                   dialect=f"{_D}sge:submission")  # fmt: skip
# section: the lsf.* config keys (unit, job_memlimit, reserve_per_task) are its keywords
LSF = BackendEntry("lsf", f"{_B}batch.lsf", "LsfBackend", batch=True, section="lsf",
                   dialect=f"{_D}lsf:submission")  # fmt: skip
ECS = BackendEntry("ecs", f"{_B}ecs._backend", "EcsBackend", shared_fs=False, section="ecs",
                   settings="EcsSettings", dialect=f"{_D}ecs:submission",
                   required=("cluster", "execution_role"))  # fmt: skip
# AWS Batch (not the batch/ family of HPC schedulers): arrays natively, its batch.* keys
AWSBATCH = BackendEntry("batch", f"{_B}awsbatch._backend", "AwsBatchBackend", shared_fs=False,
                        section="batch", settings="BatchSettings", arrays=True,
                        required=("queue",), dialect=f"{_D}awsbatch:submission")  # fmt: skip
# composite: opens the backends its route.* keys name, each as the run would open it alone;
# forks: takes the fork server for the local backend among them
ROUTE = BackendEntry("route", f"{_B}route._backend", "RouteBackend", section="route",
                     dialect=f"{_D}local:submission", forks=True, composite=True)  # fmt: skip
