"""Multi-task (MPI) jobs in the common request: read from Snakemake's keys as
snakemake-executor-plugin-slurm reads them, written in each scheduler's words, refused by
the one-machine backends, left alone by arrays and squashing, carried on the wire."""

from __future__ import annotations

import pytest

from seqera_core.dialects import ecs, local, pbs, slurm
from seqera_core.dialects.snakemake import request_from_resources
from seqera_core.errors import ResourceError
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.squash import SquashMode, SquashPolicy, unsquashable
from seqera_core.units import MIB
from seqera_core.wire import dumps, loads, unstructure


def _slurm(resources: dict[str, object], threads: int = 1) -> tuple[str, ...]:
    return slurm.submission(request_from_resources(resources, threads=threads).request).args


def test_snakemake_mpi_keys_become_slurm_tasks_and_memory_per_cpu() -> None:
    args = _slurm({"mpi": "srun", "tasks": 4, "cpus_per_task": 2, "mem_mb_per_cpu": 1000,
                   "nodes": 2, "mem_mb": 8000})  # fmt: skip
    # cpus_per_task wins over threads; --mem-per-cpu replaces --mem (sbatch takes one)
    assert args == ("--cpus-per-task=2", "--nodes=2", "--ntasks=4", "--mem-per-cpu=954M")
    assert _slurm({"mpi": "srun", "tasks_per_node": 3}) == (
        "--cpus-per-task=1",
        "--ntasks-per-node=3",
    )


@pytest.mark.parametrize(
    ("resources", "key"),
    [({"mpi": "srun"}, "mpi"), ({"nodes": 0}, "nodes"), ({"tasks": "two"}, "tasks"),
     ({"mem_mb_per_cpu": -1}, "mem_mb_per_cpu"), ({"tasks_per_node": 1.5}, "tasks_per_node")],
)  # fmt: skip
def test_bad_task_keys_are_refused_naming_the_key(resources: dict[str, object], key: str) -> None:
    with pytest.raises(ResourceError, match=key):
        request_from_resources(resources)


def test_the_slurm_plugins_own_keys_reach_sbatch() -> None:
    args = _slurm({"gpu": 2, "gpu_model": "a100", "gres": "tmpspace:10G", "cpus_per_gpu": 4,
                   "tasks_per_gpu": 1, "cluster": "c2", "qos": "fast", "constraint": "avx",
                   "reservation": "course", "slurm_requeue": True}, threads=8)  # fmt: skip
    assert "--gres=gpu:a100:2,tmpspace:10G" in args
    assert "--cpus-per-gpu=4" in args and "--ntasks-per-gpu=1" in args
    assert not any(a.startswith("--cpus-per-task") for a in args)  # Slurm takes one
    for option in ("--clusters=c2", "--qos=fast", "--constraint=avx", "--reservation=course",
                   "--requeue"):  # fmt: skip
        assert option in args
    # cpus_per_gpu <= 0 sends nothing (further.md); a CPU job never gets per-GPU options
    assert not any("per-gpu" in a for a in _slurm({"gpu": 1, "cpus_per_gpu": 0}))
    assert not any("per-gpu" in a for a in _slurm({"cpus_per_gpu": 4}))
    assert "--requeue" not in _slurm({"slurm_requeue": False})
    with pytest.raises(ResourceError, match="gres"):
        _slurm({"gpu": 1, "gres": "gpu:1"})


def test_unread_resources_are_named() -> None:
    translation = request_from_resources({"mem_mb": 100, "color": "blue", "load": 1})
    assert translation.ignored == ("color", "load")


def test_pbs_pro_select_and_torque_nodes() -> None:
    request = ResourceRequest(cpus=2, memory=1000 * MIB, nodes=2, tasks=8)
    assert pbs.pro_submission(request).args[:2] == (
        "-l", "select=2:ncpus=8:mpiprocs=4:mem=1000mb"
    )  # fmt: skip
    assert pbs.torque_submission(request).args[1].startswith("nodes=2:ppn=8,mem=1000mb")
    # tasks alone: that many one-rank chunks placed where they fit, memory shared out
    spread = ResourceRequest(cpus=1, memory=1000 * MIB, tasks=4)
    assert pbs.pro_submission(spread).args[1] == "select=4:ncpus=1:mpiprocs=1:mem=250mb"
    per_cpu = ResourceRequest(cpus=2, memory_per_cpu=100 * MIB, tasks_per_node=2, nodes=3)
    assert pbs.pro_submission(per_cpu).args[1] == "select=3:ncpus=4:mpiprocs=2:mem=400mb"


def test_one_machine_backends_take_tasks_but_refuse_nodes() -> None:
    request = ResourceRequest(cpus=2, tasks=3, memory_per_cpu=100 * MIB, container="img")
    assert local.submission(request).native == {"cpus": 6, "memory_bytes": 600 * MIB}
    assert ecs.submission(request).native["cpu"] == str(6 * 1024)
    for writer in (local.submission, ecs.submission):
        with pytest.raises(ResourceError, match=r"nodes: 2 .* runs a job on one machine"):
            writer(ResourceRequest(cpus=1, nodes=2, container="img"))


def test_arrays_and_squashing_leave_multi_task_jobs_alone() -> None:
    policy = SquashPolicy(SquashMode.SQUASH)
    mpi = ResourceRequest(cpus=1, time=60, tasks=2, mpi="srun")
    assert unsquashable(mpi, policy) == "it is a multi-task (MPI) job"
    assert unsquashable(ResourceRequest(cpus=1, time=60), policy) is None
    assert ResourceRequest(cpus=4, accelerator=Accelerator(1)).multi_task is False


def test_the_wire_carries_tasks_nodes_and_memory_per_cpu() -> None:
    request = ResourceRequest(cpus=2, nodes=2, tasks=4, tasks_per_node=2,
                              memory_per_cpu=MIB, mpi="srun")  # fmt: skip
    document = unstructure(request)
    assert document["memory_per_cpu_bytes"] == MIB and document["tasks"] == 4
    assert loads(dumps(request), ResourceRequest) == request
