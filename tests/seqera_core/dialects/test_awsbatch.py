"""AWS Batch native forms: VCPU, MEMORY MiB, GPU and the timeout, each rounded up."""

from __future__ import annotations

import pytest

from seqera_core.dialects.awsbatch import (
    memory_mib,
    resource_requirements,
    submission,
    timeout_seconds,
    vcpus,
)
from seqera_core.errors import ResourceError
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.units import GIB, MIB


@pytest.mark.parametrize(
    ("cpus", "fargate", "value"),
    [(0.5, False, "1"), (1, False, "1"), (2.1, False, "3"), (0.1, True, "0.25"),
     (0.3, True, "0.5"), (3, True, "4"), (16, True, "16")],
)  # fmt: skip
def test_vcpus_round_up(cpus: float, fargate: bool, value: str) -> None:
    assert vcpus(cpus, fargate) == value


def test_limits_of_the_forms() -> None:
    assert memory_mib(1) == 4 and memory_mib(GIB + 1) == 1025
    assert timeout_seconds(1) == 60 and timeout_seconds(3600) == 3600
    with pytest.raises(ResourceError, match=r"cpus: 17 .* at most 16 vCPUs on Fargate"):
        vcpus(17, fargate=True)
    with pytest.raises(ResourceError, match=r"accelerator: 1 .* Fargate"):
        resource_requirements(1, GIB, 1, fargate=True)


def test_submission_for_explain() -> None:
    request = ResourceRequest(cpus=3, memory=6 * GIB, time=90, accelerator=Accelerator(1, "t4"),
                              disk=GIB, queue="gpu", tasks=2)  # fmt: skip
    written = submission(request)
    assert written.native == {
        "resourceRequirements": [{"type": "VCPU", "value": "6"},
                                 {"type": "MEMORY", "value": str(6 * GIB // MIB)},
                                 {"type": "GPU", "value": "1"}],
        "timeout": {"attemptDurationSeconds": 90},
        "jobQueue": "gpu",
    }  # fmt: skip
    assert any("GPU type 't4'" in n for n in written.notes)
    assert any("no per-job disk" in n for n in written.notes)
