"""Retries that act on the cause, in the batch base class (so the same for every engine):
node failure resubmitted once elsewhere, preemption resubmitted, OOM and time limit
handed back. Driven through SlurmBackend with a scripted runner; the real daemons are
exercised in tests/integration and tests/faults."""

from __future__ import annotations

from pathlib import Path

from seqera_core.backends.base import (
    CANCELLED,
    NODE_FAILURE,
    OTHER,
    OUT_OF_MEMORY,
    PREEMPTED,
    TIME_LIMIT,
    JobSpec,
    JobState,
    JobStatus,
)
from seqera_core.backends.batch._base import RESUBMIT_LIMITS
from seqera_core.backends.batch.slurm import parse_sacct, parse_squeue
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .test_slurm import FakeSlurm, backend, fail, ok


def line(job: str, state: str, raw: int = 0, node: str = "n1") -> str:
    # squeue -h -r -O JobID:|,ArrayJobID:|,ArrayTaskID:|,State:|,Reason:|,exit_code:|,NodeList:|
    return f"{job}|{job}|N/A|{state}|None|{raw}|{node}|\n"


def test_squeue_and_sacct_say_where_a_job_ran_and_why_it_ended() -> None:
    jobs = parse_squeue(
        line("5", "NODE_FAIL", node="c7") + line("6", "PREEMPTED") + line("7", "PENDING", node="")
    )
    assert (jobs["5"].final_cause, jobs["5"].node) == (NODE_FAILURE, "c7")
    assert jobs["6"].final_cause == PREEMPTED and jobs["7"].node is None
    sacct = parse_sacct("8|NODE_FAIL|0:0|c1,c2\n9|OUT_OF_MEMORY|0:125|c1\n10|FAILED|2:0|None\n")
    assert (sacct["8"].final_cause, sacct["8"].node) == (NODE_FAILURE, "c1,c2")
    assert sacct["9"].final_cause == OUT_OF_MEMORY and sacct["10"].final_cause == OTHER


def test_every_backend_gets_a_cause_from_its_flags() -> None:
    from seqera_core.backends.base import JobHandle

    handle = JobHandle("x", "1")
    assert JobStatus(handle, JobState.SUCCEEDED).cause is None
    assert JobStatus(handle, JobState.FAILED, out_of_memory=True).cause == OUT_OF_MEMORY
    assert JobStatus(handle, JobState.FAILED, time_limit=True).cause == TIME_LIMIT
    assert JobStatus(handle, JobState.CANCELLED).cause == CANCELLED
    assert JobStatus(handle, JobState.FAILED, exit_code=1).cause == OTHER


def test_a_node_failure_is_sent_again_once_elsewhere_with_the_same_handle(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "sbatch": [ok("10"), ok("11"), ok("12")],
            "squeue": [
                ok(line("10", "NODE_FAIL", node="bad1")),
                ok(line("11", "RUNNING", node="good")),
                ok(line("11", "COMPLETED", node="good")),
            ],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner)
    request = ResourceRequest(cpus=2, memory=100 * MIB)
    [handle] = slurm.submit([JobSpec("j", ["true"], request)])
    first = runner.argvs[0]
    [status] = slurm.poll([handle])
    assert status.handle == handle and status.state is JobState.PENDING
    assert status.resubmissions == 1 and "node failure on bad1: sent again as job 11" in (
        status.reason or ""
    )
    again = runner.argvs[-1]
    assert again[0] == "sbatch" and "--exclude=bad1" in again
    # same resources, same script, a new submission key
    assert [a for a in again if a.startswith(("--cpus", "--mem"))] == [
        "--cpus-per-task=2",
        "--mem=100M",
    ]
    assert again[-1] == first[-1]
    comment = next(a for a in again if a.startswith("--comment="))
    assert comment.split(";")[0].endswith("-r1")
    [running] = slurm.poll([handle])
    assert runner.argvs[-1][runner.argvs[-1].index("-j") + 1] == "11"
    assert running.state is JobState.RUNNING and running.node == "good"
    [done] = slurm.poll([handle])
    assert (done.state, done.handle, done.resubmissions) == (JobState.SUCCEEDED, handle, 1)
    assert slurm.calls["sbatch"] == 2


def test_a_second_node_failure_goes_back_to_the_engine(tmp_path: Path) -> None:
    assert RESUBMIT_LIMITS[NODE_FAILURE] == 1
    runner = FakeSlurm(
        {
            "sbatch": [ok("10"), ok("11")],
            "squeue": [
                ok(line("10", "NODE_FAIL", node="a")),
                ok(line("11", "NODE_FAIL", node="b")),
            ],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("j", ["true"])])
    slurm.poll([handle])
    [status] = slurm.poll([handle])
    assert (status.state, status.cause, status.node) == (JobState.FAILED, NODE_FAILURE, "b")
    assert status.resubmissions == 1 and slurm.calls["sbatch"] == 2
    assert slurm.poll([handle]) == [status]  # settled: no more calls


def test_preemption_is_sent_again_without_excluding_anything(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "sbatch": [ok("10"), ok("11"), ok("12"), ok("13")],
            "squeue": [
                ok(line("10", "PREEMPTED")),
                ok(line("11", "PREEMPTED")),
                ok(line("12", "PREEMPTED")),
                ok(line("13", "PREEMPTED")),
            ],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("j", ["true"])])
    states = [slurm.poll([handle])[0] for _ in range(4)]
    assert [s.state for s in states] == [JobState.PENDING] * 3 + [JobState.FAILED]
    assert states[-1].cause == PREEMPTED and states[-1].resubmissions == 3
    assert not any(a.startswith("--exclude") for argv in runner.argvs for a in argv)


def test_out_of_memory_and_time_limit_go_back_to_the_engine(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "sbatch": [ok("10"), ok("11")],
            "squeue": [ok(line("10", "OUT_OF_MEMORY", 125 << 8) + line("11", "TIMEOUT", 15))],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner)
    handles = slurm.submit([JobSpec("a", ["true"]), JobSpec("b", ["true"])])
    oom, late = slurm.poll(handles)
    assert (oom.state, oom.cause, oom.out_of_memory) == (JobState.FAILED, OUT_OF_MEMORY, True)
    assert (late.state, late.cause, late.time_limit) == (JobState.FAILED, TIME_LIMIT, True)
    assert slurm.calls["sbatch"] == 2  # nothing sent again


def test_cancel_reaches_the_resubmitted_run_and_it_is_not_sent_again(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "sbatch": [ok("10"), ok("11")],
            "squeue": [ok(line("10", "NODE_FAIL")), ok(line("11", "CANCELLED", 15))],
            "scancel": [ok()],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("j", ["true"])])
    slurm.poll([handle])
    slurm.cancel([handle])
    assert runner.argvs[-1] == ["scancel", "11"]
    [status] = slurm.poll([handle])
    assert (status.state, status.cause) == (JobState.CANCELLED, CANCELLED)


def test_an_array_element_on_a_failed_node_is_sent_again_alone(tmp_path: Path) -> None:
    from seqera_core.squash import SquashPolicy

    runner = FakeSlurm(
        {
            "sbatch": [ok("20"), ok("30")],
            "squeue": [
                ok("21|20|0|COMPLETED|None|0|n1|\n22|20|1|NODE_FAIL|None|0|n2|\n"),
                ok("30|30|N/A|COMPLETED|None|0|n1|\n"),
            ],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner, squash=SquashPolicy.parse({"mode": "array"}))
    handles = slurm.submit([JobSpec("a", ["true"]), JobSpec("b", ["true"])])
    assert [h.native_id for h in handles] == ["20_0", "20_1"]
    first, second = slurm.poll(handles)
    assert first.state is JobState.SUCCEEDED and second.state is JobState.PENDING
    again = [argv for argv in runner.argvs if argv[0] == "sbatch"][-1]
    assert "--exclude=n2" in again and not any(a.startswith("--array") for a in again)
    assert again[-1] == str(Path(handles[1].stdout or "").parent / "job.sh")
    assert [s.state for s in slurm.poll(handles)] == [JobState.SUCCEEDED] * 2


def test_refused_with_the_node_excluded_it_is_sent_without_exclusion(tmp_path: Path) -> None:
    # a one-node partition: sbatch refuses --exclude of its only node
    refused = fail(
        "sbatch: error: Batch job submission failed: Requested node configuration is not available"
    )
    runner = FakeSlurm(
        {
            "sbatch": [ok("10"), refused, ok("11")],
            "squeue": [ok(line("10", "NODE_FAIL", node="only")), ok(line("11", "COMPLETED"))],
            "sacct": [ok("")],
        }
    )
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("j", ["true"])])
    [status] = slurm.poll([handle])
    sent = [argv for argv in runner.argvs if argv[0] == "sbatch"]
    assert "--exclude=only" in sent[1] and not any(a.startswith("--exclude") for a in sent[2])
    assert status.state is JobState.PENDING and "job 11" in (status.reason or "")
    assert slurm.poll([handle])[0].state is JobState.SUCCEEDED


def test_an_array_that_went_through_and_left_squeue_is_found_by_an_element_mark(
    tmp_path: Path,
) -> None:
    import subprocess

    from seqera_core.backends.batch._commands import CommandResult
    from seqera_core.squash import SquashPolicy

    def purged(argv: object) -> CommandResult:
        # element 1 ran (and ended) before squeue was asked, then left its listing
        array = next(iter(tmp_path.glob("jobs/array.*")))
        env = {"SLURM_ARRAY_JOB_ID": "40", "SLURM_JOB_ID": "42", "PATH": "/usr/bin:/bin"}
        subprocess.run(["sh", str(array / "1.dir" / "job.sh")], env=env, check=True)
        return ok("")

    runner = FakeSlurm({"sbatch": [CommandResult(["sbatch"], None)], "squeue": [purged]})
    slurm = backend(tmp_path, runner, squash=SquashPolicy.parse({"mode": "array"}))
    handles = slurm.submit([JobSpec("a", ["true"]), JobSpec("b", ["true"])])
    assert [h.native_id for h in handles] == ["40_0", "40_1"]
    assert slurm.calls == {"sacctmgr": 1, "sbatch": 1, "squeue": 1}
