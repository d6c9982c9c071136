"""One task through limits, platform, resolvers and labels."""

from __future__ import annotations

from seqera_core import ResourceRequest, ResourceResponse
from seqera_core.pipeline import prepare
from seqera_core.platforms import parse
from seqera_core.resolvers import Resolver

GIB = 2**30
PLATFORM = parse({"scheduler": "slurm", "queues": {
    "small": {"max_cpus": 4, "max_memory": "16 GiB", "max_walltime": "1h"},
}})  # fmt: skip


class Greedy(Resolver):
    name = "greedy"

    def __init__(self) -> None:
        self.calls = 0

    def resolve(self, request: ResourceRequest) -> ResourceResponse:
        self.calls += 1
        return ResourceResponse(cpus=8, memory=32 * GIB, disk=GIB, time=600)


def test_resolver_answer_never_exceeds_the_chosen_queue() -> None:
    greedy = Greedy()
    request = ResourceRequest(cpus=1, memory=GIB, time=60, labels={"team": "a", "sample": "s1"})
    prepared = prepare(
        request, platform=PLATFORM, resolvers=[greedy], run_labels={"team": "a", "run": "r1"}
    )
    assert prepared.ok and prepared.declared is request
    assert (prepared.request.cpus, prepared.request.memory) == (4, 16 * GIB)
    assert prepared.request.queue == "small"
    assert prepared.request.labels == {"sample": "s1"}  # only the delta
    assert prepared.labels == {"team": "a", "run": "r1", "sample": "s1"}
    assert "cpus 8 capped to the queue limit 4" in prepared.notes


def test_an_impossible_task_never_reaches_the_resolvers() -> None:
    greedy = Greedy()
    prepared = prepare(ResourceRequest(memory=64 * GIB), platform=PLATFORM, resolvers=[greedy])
    assert not prepared.ok and prepared.resolution is None and greedy.calls == 0


def test_no_answer_keeps_undeclared_values_for_the_scheduler() -> None:
    prepared = prepare(ResourceRequest(memory=GIB))
    assert prepared.request.cpus is None and prepared.request.memory == GIB
    assert prepared.resolution is not None and prepared.resolution.effective.cpus == 1


class MemoryOnly(Resolver):
    """Sizes memory; answers the defaults it was given for everything else."""

    name = "memory-only"

    def resolve(self, request: ResourceRequest) -> ResourceResponse:
        return ResourceResponse(cpus=request.cpus or 1, memory=GIB // 2, disk=10 * GIB, time=3600)


def test_an_answer_leaves_undeclared_values_it_did_not_change_to_the_scheduler() -> None:
    # 10 GiB of disk and 1 h are the defaults: the resolver had no opinion on them, and a
    # --tmp the node cannot give would make the job unschedulable.
    prepared = prepare(ResourceRequest(cpus=2, memory=2 * GIB), resolvers=[MemoryOnly()])
    assert prepared.request.memory == GIB // 2
    assert prepared.request.disk is None and prepared.request.time is None
    # a value it did change is applied even when undeclared
    assert prepare(ResourceRequest(memory=2 * GIB), resolvers=[Greedy()]).request.disk == GIB
