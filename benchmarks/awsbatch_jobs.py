"""1,000 jobs of 10 shapes through the AWS Batch backend against moto: API calls per job,
each job on its own and the same jobs as arrays, side by side.

``uv run python benchmarks/awsbatch_jobs.py [--jobs 1000] [--shapes 10]`` starts moto's
server on 127.0.0.1 with Batch in its no-Docker mode (tests/integration/awsbatch/
emulator.py: jobs succeed at once), submits every job, polls until all have finished and
prints the calls each AWS operation took against the targets: one RegisterJobDefinition
per shape, one SubmitJob per job (alone) or per array of up to ``squash.max_jobs``
elements, and ceil(active / 100) DescribeJobs per poll. A second backend then submits the
same shapes, as a second run would, and must register nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _emit import Emitter, add_argument
from _polling import submit_and_poll

from seqera_core.backends import JobSpec
from seqera_core.backends.awsbatch import AwsBatchBackend, BatchSettings
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashMode, SquashPolicy
from seqera_core.units import GIB
from tests.integration.awsbatch.emulator import BatchEmulator
from tests.integration.ecs.emulator import moto_ecs

__all__ = ["main"]


def _jobs(count: int, shapes: int) -> list[JobSpec]:
    return [
        JobSpec(
            f"job-{i}",
            ("echo", str(i)),
            ResourceRequest(
                cpus=1 + i % shapes % 8, memory=(1 + i % shapes) * GIB, container="ubuntu:24.04"
            ),
        )
        for i in range(count)
    ]


def _run(emulator: BatchEmulator, jobs: list[JobSpec], arrays: bool) -> dict[str, object]:
    emulator.reset()
    emulator.create_queue()
    policy = SquashPolicy(SquashMode.ARRAY if arrays else SquashMode.OFF, max_jobs=500)
    settings = BatchSettings(queue="seqera", usage_wait=0)
    backend = AwsBatchBackend(settings, squash=policy)
    polled = submit_and_poll(backend, jobs, "DescribeJobs")
    again = AwsBatchBackend(settings)
    again.submit(jobs[: len({j.request for j in jobs})])
    return {
        "calls": dict(sorted(backend.calls.items())),
        "failed": sum(s.exit_code != 0 for s in polled.statuses),
        "missed": polled.missed,
        "polls": len(polled.polls),
        "again": again.calls["RegisterJobDefinition"],
        "submit_ms": (polled.submitted - polled.started) / len(jobs) * 1000,
        "total": polled.finished - polled.started,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints the figures, returns 1 if a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--shapes", type=int, default=10)
    add_argument(parser)
    args = parser.parse_args(argv)
    emit = Emitter("awsbatch_jobs", args.results)
    jobs = _jobs(args.jobs, args.shapes)
    ok = True
    with moto_ecs() as server:
        os.environ.update(server.env)
        emulator = BatchEmulator(server)
        for arrays in (False, True):
            found = _run(emulator, jobs, arrays)
            calls = found["calls"]
            assert isinstance(calls, dict)
            variant = "arrays" if arrays else "alone"
            target = args.shapes * math.ceil(args.jobs / args.shapes / 500) if arrays else args.jobs
            print(f"{variant}: jobs {args.jobs}, shapes {args.shapes}, failed {found['failed']}")
            registered, sent = calls.get("RegisterJobDefinition"), calls.get("SubmitJob")
            print(f"  RegisterJobDefinition {registered} (target {args.shapes}); "
                  f"SubmitJob {sent} (target {target})")  # fmt: skip
            print(f"  polls {found['polls']}, off the ceil(active/100) target: {found['missed']}")
            total = sum(calls.values())
            print(f"  all calls: {calls}; per job {total / args.jobs:.4f}")
            print(f"  second run: RegisterJobDefinition {found['again']}")
            print(f"  wall: submit {found['submit_ms']:.1f} ms/job, total {found['total']:.2f} s")
            case = {"jobs": args.jobs, "shapes": args.shapes, "variant": variant}
            emit.figure("calls per job", round(total / args.jobs, 4), "calls", **case)
            emit.figure("SubmitJob calls", calls.get("SubmitJob", 0), "calls", **case)
            per_job = float(str(found["submit_ms"]))
            emit.figure("submit wall per job", round(per_job, 3), "ms", **case)
            ok = ok and calls.get("SubmitJob") == target and not found["missed"]
            ok = ok and calls.get("RegisterJobDefinition") == args.shapes and not found["again"]
            ok = ok and not found["failed"]
    emit.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
