"""``platform_yaml``: a platform from scontrol and sinfo outputs (the forms of Slurm 22.05's
``scontrol show partition -o`` and ``sinfo -h -N -o '%P|%c|%m|%G|%f'``, GPU nodes written
by hand in them: the test cluster has none; the real cluster's are in tests/integration)."""

from __future__ import annotations

import yaml

from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.platforms import parse, platform_yaml, validate
from seqera_core.units import GIB

SCONTROL = "\n".join(
    " ".join(words)
    for words in (
        ("PartitionName=cpu AllowGroups=ALL Default=YES MaxNodes=UNLIMITED",
         "MaxTime=2-00:00:00 Nodes=c[1-2] State=UP MaxCPUsPerNode=UNLIMITED",
         "MaxMemPerNode=UNLIMITED"),
        ("PartitionName=gpu AllowGroups=ALL MaxTime=12:00:00 Nodes=g1 State=UP",
         "MaxCPUsPerNode=32 MaxMemPerNode=256000"),
        ("PartitionName=old AllowGroups=ALL MaxTime=UNLIMITED Nodes=o1 State=DOWN",),
    )
)  # fmt: skip
SINFO = """\
cpu*|64|515000|(null)|avx512,ib
cpu*|32|257000|(null)|avx2
gpu|64|515000|gpu:a100:4(S:0-1),tmpspace:100G|avx512
old|8|16000|(null)|(null)
"""


def test_partitions_become_queues_with_one_nodes_limits() -> None:
    text = platform_yaml("site", SCONTROL, SINFO)
    platform = parse(yaml.safe_load(text), "generated")
    assert platform.default_queue == "cpu"
    cpu, gpu, old = (platform.queue(n) for n in ("cpu", "gpu", "old"))
    assert cpu is not None and gpu is not None and old is not None
    assert (cpu.max_cpus, cpu.max_memory, cpu.max_walltime, cpu.max_gpus) == (
        64,
        515000 * 2**20,
        2 * 86400,
        0,
    )
    # the partition's per-node caps win over the node's size
    assert (gpu.max_cpus, gpu.max_memory, gpu.max_walltime, gpu.max_gpus) == (
        32,
        256000 * 2**20,
        12 * 3600,
        4,
    )
    assert old.auto is False and old.max_walltime is None
    assert "# GPU types: a100" in text and "# node features (constraint): avx2, avx512, ib" in text


def test_validation_chooses_the_queue_that_can_run_the_job() -> None:
    platform = parse(yaml.safe_load(platform_yaml("site", SCONTROL, SINFO)), "generated")
    report = validate(
        platform, ResourceRequest(cpus=8, memory=16 * GIB, accelerator=Accelerator(2))
    )
    assert report.ok and report.queue == "gpu"
    refused = validate(platform, ResourceRequest(cpus=128))
    assert not refused.ok
