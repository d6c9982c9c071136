"""1,000 tasks of 10 resource shapes through the ECS backend against moto: API calls per task.

``uv run python benchmarks/ecs_tasks.py [--tasks 1000] [--shapes 10]`` starts moto's server
on 127.0.0.1 (tests/integration/ecs/emulator.py, with its managed-instances workarounds),
submits every task, polls until all have finished and prints the calls each AWS operation
took against the targets: one RegisterTaskDefinition per shape, one RunTask per task and
ceil(active / 100) DescribeTasks per poll. A second backend then submits the same shapes,
as a second run would, and must register nothing. Emulated tasks advance one state per
DescribeTasks, so every task takes five polls to finish.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _emit import Emitter, add_argument
from _polling import submit_and_poll

from seqera_core.backends import JobSpec
from seqera_core.backends.ecs import EcsBackend, EcsSettings
from seqera_core.models import ResourceRequest
from seqera_core.units import GIB
from tests.integration.ecs.emulator import moto_ecs

__all__ = ["main"]

ROLE = "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"


def _jobs(count: int, shapes: int) -> list[JobSpec]:
    return [
        JobSpec(
            f"task-{i}",
            ("echo", str(i)),
            ResourceRequest(
                cpus=1 + i % shapes, memory=(2 + 2 * (i % shapes)) * GIB, container="ubuntu:24.04"
            ),
        )
        for i in range(count)
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints the figures, returns 1 if a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--shapes", type=int, default=10)
    add_argument(parser)
    args = parser.parse_args(argv)
    emit = Emitter("ecs_tasks", args.results)
    with moto_ecs() as emulator:
        os.environ.update(emulator.env)
        emulator.create_cluster()
        settings = EcsSettings(cluster="seqera", execution_role=ROLE)
        backend = EcsBackend(settings)
        polled = submit_and_poll(backend, _jobs(args.tasks, args.shapes), "DescribeTasks")
        polls, missed = polled.polls, polled.missed
        started, submitted, finished = polled.started, polled.submitted, polled.finished
        failed = sum(s.exit_code != 0 for s in polled.statuses)
        again = EcsBackend(settings)
        again.submit(_jobs(args.shapes, args.shapes))
    registered = backend.calls["RegisterTaskDefinition"]
    print(f"tasks {args.tasks}, shapes {args.shapes}, failed {failed}")
    print(f"RegisterTaskDefinition {registered} (target {args.shapes})")
    print(f"RunTask {backend.calls['RunTask']} (target {args.tasks})")
    print("DescribeTasks per poll (active tasks -> calls): " + ", ".join(
        f"{a} -> {c}" for a, c in polls
    ))  # fmt: skip
    print(f"polls off the ceil(active/100) target: {missed}")
    print(f"all calls: {dict(sorted(backend.calls.items()))}")
    print(
        f"second run: RegisterTaskDefinition {again.calls['RegisterTaskDefinition']}, "
        f"ListTaskDefinitions {again.calls['ListTaskDefinitions']}, "
        f"DescribeTaskDefinition {again.calls['DescribeTaskDefinition']}"
    )
    print(
        f"wall: submit {submitted - started:.2f} s ({(submitted - started) / args.tasks * 1000:.1f}"
        f" ms/task), polls {finished - submitted:.2f} s, total {finished - started:.2f} s"
    )
    case = {"tasks": args.tasks, "shapes": args.shapes}
    for operation, count in sorted(backend.calls.items()):
        emit.figure(f"{operation} calls", count, "calls", **case)
    emit.figure(
        "calls per task", round(sum(backend.calls.values()) / args.tasks, 4), "calls", **case
    )
    emit.figure("polls off target", missed, "polls", **case)
    emit.figure("failed", failed, "tasks", **case)
    emit.figure(
        "second run RegisterTaskDefinition", again.calls["RegisterTaskDefinition"], "calls", **case
    )
    emit.figure(
        "submit wall per task", round((submitted - started) / args.tasks * 1000, 3), "ms", **case
    )
    emit.figure("total wall", round(finished - started, 3), "s", **case)
    emit.close()
    ok = (
        registered == args.shapes
        and backend.calls["RunTask"] == args.tasks
        and not missed
        and not failed
        and not again.calls["RegisterTaskDefinition"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
