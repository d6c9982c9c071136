"""The Slurm backend without a daemon: argv, the job script, parsers, retries and probing.

Parser inputs are real output of slurm-wlm 22.05 (Debian 12) recorded while writing these
tests: ``squeue -h -t all -O JobID:|,State:|,Reason:|,exit_code:|`` and
``sacct -c -n -P -o JobIDRaw,State,ExitCode``.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core.backends.base import JobHandle, JobSpec, JobState
from seqera_core.backends.batch._base import (
    CommandResult,
    RetryPolicy,
    SchedulerError,
    SubmitError,
    run_command,
)
from seqera_core.backends.batch.slurm import (
    SlurmBackend,
    parse_sacct,
    parse_sacct_cpu,
    parse_sacct_usage,
    parse_squeue,
    slurm_state,
)
from seqera_core.errors import ResourceError, UsageError
from seqera_core.labels import decode_labels, encode_labels
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.units import GIB

DATA = Path(__file__).parents[1] / "data"
SQUEUE = """\
4|CANCELLED|None|15|
1|COMPLETED|None|0|
2|FAILED|NonZeroExitCode|768|
3|FAILED|JobLaunchFailure|9|
5|TIMEOUT|TimeLimit|15|
6|RUNNING|None|0|
7|PENDING|Resources|0|
"""
SACCT_JOBCOMP = """\
3|FAILED|0:9
2|FAILED|3:0
4|CANCELLED|0:0
"""
ACCOUNTING_DISABLED = "Slurm accounting storage is disabled\n"

Reply = CommandResult | Callable[[Sequence[str]], CommandResult]


class FakeSlurm:
    """A runner answering each command from a queue of replies per program, recording argv."""

    def __init__(self, replies: Mapping[str, Sequence[Reply]]) -> None:
        self.replies = {name: list(items) for name, items in replies.items()}
        self.argvs: list[list[str]] = []
        self.lookups: list[list[str]] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, cwd: str | None, env: Mapping[str, str] | None
    ) -> CommandResult:
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
        key = "sacct -c" if argv[:2] == ["sacct", "-c"] else argv[0]
        if key not in self.replies and key in ("sacctmgr", "sinfo"):
            # the site's look-ups (account, TmpDisk) where a test gave no reply: a cluster
            # without accounting; kept apart from argvs, the commands a test looks at
            self.lookups.append(list(argv))
            return fail(f"{key}: error: Problem talking to the database")
        self.argvs.append(list(argv))
        queue = self.replies[key]
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        return reply(argv) if callable(reply) else reply


def ok(stdout: str = "") -> CommandResult:
    return CommandResult(["x"], 0, stdout, "")


def fail(stderr: str, code: int = 1) -> CommandResult:
    return CommandResult(["x"], code, "", stderr)


def backend(tmp_path: Path, runner: FakeSlurm, **options: object) -> SlurmBackend:
    sleeps: list[float] = []
    made = SlurmBackend(work_dir=tmp_path / "jobs", runner=runner, sleep=sleeps.append, **options)
    made.sleeps = sleeps  # type: ignore[attr-defined]
    return made


def test_submission_argv_carries_every_resource_and_quoted_values(tmp_path: Path) -> None:
    runner = FakeSlurm({"sbatch": [ok("42\n")]})
    request = ResourceRequest(
        cpus=1.5,
        memory=3 * GIB,
        time=90 * 60 + 1,
        accelerator=Accelerator(2, "a100"),
        queue="gpu",
        account="proj",
        extra={"slurm.qos": "high"},
        labels={"run": "r1"},
    )
    spec = JobSpec(
        "name; rm -rf /",
        ["echo", "hi"],
        request,
        workdir=str(tmp_path / "w d"),
        labels={"team": "a;b=c\nd"},
        stdout="out%j.txt",
    )
    [handle] = backend(tmp_path, runner).submit([spec])
    argv = runner.argvs[0]
    assert argv[:3] == ["sbatch", "--parsable", "--job-name=name; rm -rf /"]
    assert f"--output={tmp_path / 'w d'}/out%%j.txt" in argv  # % escaped for sbatch
    assert f"--chdir={tmp_path / 'w d'}" in argv
    comment = next(a for a in argv if a.startswith("--comment="))
    key = "seqera-" + Path(argv[-1]).parent.name.rpartition(".")[2]
    assert decode_labels(comment.removeprefix("--comment=")) == {
        "seqera-submission": key,  # first, so no label can push it out
        "run": "r1",
        "team": "a;b=c\nd",
    }
    assert comment.startswith(f"--comment=seqera-submission={key};")
    for expected in (
        "--cpus-per-task=2",
        "--mem=3072M",
        "--time=91",
        "--gres=gpu:a100:2",
        "--partition=gpu",
        "--account=proj",
        "--qos=high",
    ):
        assert expected in argv
    assert argv[-1].endswith("/job.sh") and Path(argv[-1]).exists()
    assert handle.native_id == "42" and handle.backend == "slurm"
    assert handle.stdout == str(tmp_path / "w d" / "out%j.txt")


def test_parsable_output_with_a_cluster_name(tmp_path: Path) -> None:
    runner = FakeSlurm({"sbatch": [ok("77;cluster2\n")]})
    [handle] = backend(tmp_path, runner).submit([JobSpec("j", ["true"])])
    assert handle.native_id == "77"


def test_script_quotes_everything_and_keeps_values_out_of_comments(tmp_path: Path) -> None:
    runner = FakeSlurm({"sbatch": [ok("1")]})
    evil = "$(touch PWNED); `touch PWNED2`\n#SBATCH --mem=1T"
    spec = JobSpec(
        evil,
        ["sh", "-c", 'printf "%s|%s|%s" "$1" "$X" "$SEQERA_LABEL_K_1"', "sh", evil],
        env={"X": evil},
        labels={"k.1": evil},
        workdir=str(tmp_path),
    )
    [handle] = backend(tmp_path, runner).submit([spec])
    script = Path(runner.argvs[0][-1])
    for line in script.read_text().splitlines():
        if line.startswith("#"):
            assert "PWNED" not in line and "SBATCH" not in line
    # Run it as the scheduler would: nothing executes, every value arrives intact.
    done = subprocess.run(["sh", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(handle.stdout or "").parent == script.parent
    assert done.stdout == f"{evil}|{evil}|{evil}"
    assert not list(tmp_path.glob("PWNED*"))
    assert (script.parent / "exitcode").read_text() == "0\n"


def test_a_job_that_cannot_be_written_fails_the_batch_before_any_submission(
    tmp_path: Path,
) -> None:
    runner = FakeSlurm({"sbatch": [ok("1")]})
    slurm = backend(tmp_path, runner)
    with pytest.raises(UsageError, match=r"'j' cannot be submitted.*not valid in a shell"):
        slurm.submit([JobSpec("ok", ["true"]), JobSpec("j", ["true"], env={"A B": "x"})])
    with pytest.raises(UsageError, match="empty command"):
        slurm.submit([JobSpec("j", [])])
    assert slurm.calls["sbatch"] == 0
    assert not list((tmp_path / "jobs").glob("*/job.sh"))  # nothing left behind


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("--qos='high", "slurm_extra: .*no closing quotation"),
        ("--comment=mine", "other than --comment"),
        ("-J other", "other than -J"),
        ("--output=/tmp/x", "other than --output"),
    ],
)
def test_a_bad_slurm_extra_fails_every_job_before_any_goes_out(
    tmp_path: Path, extra: str, message: str
) -> None:
    # Defect 3: the first job used to reach sbatch before the second's argv raised.
    runner = FakeSlurm({"sbatch": [ok("1")]})
    slurm = backend(tmp_path, runner)
    bad = ResourceRequest(extra={"slurm.extra": extra})
    with pytest.raises(ResourceError, match=message) as error:
        slurm.submit([JobSpec("ok", ["true"]), JobSpec("bad", ["true"], bad)])
    assert isinstance(error.value, UsageError) and error.value.field == "slurm_extra"
    assert slurm.calls["sbatch"] == 0 and runner.argvs == []


def test_squeue_parser_on_recorded_output() -> None:
    jobs = parse_squeue(SQUEUE)
    assert jobs["1"].state is JobState.SUCCEEDED and jobs["1"].exit_code == 0
    assert (jobs["2"].state, jobs["2"].exit_code) == (JobState.FAILED, 3)
    assert (jobs["3"].state, jobs["3"].exit_code) == (JobState.FAILED, 137)
    assert jobs["4"].state is JobState.CANCELLED and jobs["4"].exit_code == 143
    assert jobs["5"].time_limit and jobs["5"].state is JobState.FAILED
    assert jobs["6"].state is JobState.RUNNING and jobs["6"].exit_code is None
    assert jobs["7"].state is JobState.PENDING and jobs["7"].reason == "Resources"


def test_sacct_parser_reads_code_and_signal() -> None:
    jobs = parse_sacct(SACCT_JOBCOMP + "2.batch|FAILED|3:0\n8|CANCELLED by 0|0:15\n")
    assert (jobs["3"].exit_code, jobs["3"].reason) == (137, "killed by SIGKILL")
    assert (jobs["2"].state, jobs["2"].exit_code) == (JobState.FAILED, 3)
    assert jobs["4"].state is JobState.CANCELLED
    assert jobs["8"].state is JobState.CANCELLED and jobs["8"].exit_code == 143
    assert "2.batch" not in jobs


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("PENDING", JobState.PENDING),
        ("CONFIGURING", JobState.PENDING),
        ("REQUEUED", JobState.PENDING),
        ("RUNNING", JobState.RUNNING),
        ("COMPLETING", JobState.RUNNING),
        ("SUSPENDED", JobState.RUNNING),
        ("COMPLETED", JobState.SUCCEEDED),
        ("FAILED", JobState.FAILED),
        ("TIMEOUT", JobState.FAILED),
        ("OUT_OF_MEMORY", JobState.FAILED),
        ("NODE_FAIL", JobState.FAILED),
        ("PREEMPTED", JobState.FAILED),
        ("BOOT_FAIL", JobState.FAILED),
        ("DEADLINE", JobState.FAILED),
        ("CANCELLED", JobState.CANCELLED),
        ("SOMETHING_NEW", JobState.UNKNOWN),
    ],
)
def test_state_map(name: str, state: JobState) -> None:
    seen = slurm_state(name, 9)
    assert seen.state is state
    assert seen.out_of_memory is (name == "OUT_OF_MEMORY")
    assert seen.time_limit is (name == "TIMEOUT")
    assert seen.exit_code == (9 if state.finished else None)


def test_poll_is_one_squeue_plus_one_history_lookup_and_the_source_is_probed_once(
    tmp_path: Path,
) -> None:
    runner = FakeSlurm(
        {
            "squeue": [ok("6|RUNNING|None|0|\n")],
            "sacct": [fail(ACCOUNTING_DISABLED)],
            "sacct -c": [ok(SACCT_JOBCOMP)],
        }
    )
    slurm = backend(tmp_path, runner)
    handles = [JobHandle("slurm", i) for i in ("6", "2", "3", "99")]
    first = slurm.poll(handles)
    assert [s.state for s in first] == [
        JobState.RUNNING,
        JobState.FAILED,
        JobState.FAILED,
        JobState.UNKNOWN,
    ]
    squeue = runner.argvs[0]
    assert squeue[squeue.index("-j") + 1] == "6,2,3,99"
    assert slurm.history == "jobcomp"
    slurm.poll(handles)
    # Finished jobs are not asked about again; the broken source is not probed again.
    assert runner.argvs[-2][runner.argvs[-2].index("-j") + 1] == "6,99"
    assert runner.argvs[-1][:2] == ["sacct", "-c"]
    assert slurm.calls == {"squeue": 2, "sacct": 3}


# Recorded from a one-node slurm-wlm 22.05.8 with slurmdbd (tests/integration/slurm/
# slurm-up.sh, WITH_DBD=1, jobs submitted with --acctg-freq=task=1): a job that held
# ~200 MB, one that exited 3, a pending job cancelled, and an array's two elements.
SACCT_USAGE = (DATA / "sacct-usage.txt").read_text()


def test_usage_from_accounting() -> None:
    usage = parse_sacct_usage(SACCT_USAGE)
    assert usage["6"] == (5.0, 210292 * 1024)
    assert usage["9"] == (2.0, 63872 * 1024)
    assert usage["11"] == (0.0, None)  # never ran: no step, no peak (not zero)
    assert usage["10_1"] == (4.0, 210072 * 1024)
    assert set(usage) == {"6", "9", "11", "10_0", "10_1"}


# Slurm 22.05 with slurmdbd (tests/integration/slurm/slurm-up.sh WITH_DBD=1), jobs: 3 two
# background spinners, 4 an srun step, 5 a sleep; sacct -n -P -o JobID,Elapsed,MaxRSS,TotalCPU
SACCT_CPU = (DATA / "sacct-usage-cpu.txt").read_text()


def test_cpu_time_from_accounting() -> None:
    # the allocation line sums its steps (4: batch 0.025 + step 0 0.844)
    assert parse_sacct_cpu(SACCT_CPU) == pytest.approx({"3": 1.659, "4": 0.869, "5": 0.005})
    # a line of steps only still counts; an older three-column output has none
    assert parse_sacct_cpu("7.batch|00:01:00|1K|1-02:03:04.5\n7.0|00:00:01|1K|01:00\n") == {
        "7": pytest.approx(93784.5 + 60)
    }
    assert parse_sacct_cpu(SACCT_USAGE) == {}
    assert parse_sacct_usage(SACCT_CPU)["4"] == (2.0, 13432 * 1024)


def test_finished_jobs_get_their_usage_in_one_sacct_per_poll(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "squeue": [
                ok("6|RUNNING|None|0|\n9|RUNNING|None|0|\n10_0|PENDING|None|0|\n"),
                ok("6|COMPLETED|None|0|\n9|FAILED|NonZeroExitCode|768|\n10_0|RUNNING|None|0|\n"),
                ok("10_0|COMPLETED|None|0|\n"),
            ],
            "sacct": [ok(SACCT_USAGE)],
        }
    )
    slurm = backend(tmp_path, runner)
    handles = [JobHandle("slurm", i) for i in ("6", "9", "10_0")]
    assert all(s.peak_memory_bytes is None for s in slurm.poll(handles))
    assert slurm.calls["sacct"] == 0  # nothing ended yet
    done, failed, running = slurm.poll(handles)
    assert (done.wall_seconds, done.peak_memory_bytes) == (5.0, 210292 * 1024)
    assert (failed.state, failed.exit_code, failed.peak_memory_bytes) == (
        JobState.FAILED, 3, 63872 * 1024,
    )  # fmt: skip
    assert running.state is JobState.RUNNING
    assert runner.argvs[-1] == [
        "sacct", "-n", "-P", "-j", "6,9", "-o", "JobID,Elapsed,MaxRSS,TotalCPU"
    ]  # fmt: skip
    last = slurm.poll(handles)
    assert last[2].peak_memory_bytes == 210268 * 1024
    assert slurm.poll(handles) == last  # remembered: no more calls
    assert slurm.calls == {"squeue": 3, "sacct": 2}


def test_a_job_whose_batch_step_slurmdbd_has_not_shown_yet_is_asked_again(
    tmp_path: Path,
) -> None:
    # a busy slurmdbd may hold the job's end before its batch step's TotalCPU and MaxRSS
    early = "6|00:00:03||00:00:00\n"
    whole = "6|00:00:03||00:01.500\n6.batch|00:00:03|2048K|00:01.500\n"
    runner = FakeSlurm({"squeue": [ok("6|COMPLETED|None|0|\n")],
                        "sacct": [ok(early), ok(early), ok(whole)]})  # fmt: skip
    slurm = backend(tmp_path, runner)
    [done] = slurm.poll([JobHandle("slurm", "6")])
    assert (done.cpu_seconds, done.peak_memory_bytes) == (1.5, 2048 * 1024)
    assert slurm.calls["sacct"] == 3 and slurm.sleeps == [1.0, 1.0]  # type: ignore[attr-defined]
    # never shown: asked a bounded number of times, and what it shows is kept
    runner = FakeSlurm({"squeue": [ok("7|COMPLETED|None|0|\n")], "sacct": [ok("7|00:00:03||")]})
    slurm = backend(tmp_path, runner)
    [done] = slurm.poll([JobHandle("slurm", "7")])
    assert done.wall_seconds == 3.0 and slurm.calls["sacct"] == 4


def test_without_accounting_sacct_is_asked_once(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "squeue": [
                ok("1|COMPLETED|None|0|\n"),
                ok("1|COMPLETED|None|0|\n2|COMPLETED|None|0|\n"),
            ],
            "sacct": [fail(ACCOUNTING_DISABLED)],
        }
    )
    slurm = backend(tmp_path, runner)
    assert slurm.poll([JobHandle("slurm", "1")])[0].peak_memory_bytes is None
    assert slurm.poll([JobHandle("slurm", "2")])[0].state is JobState.SUCCEEDED
    assert slurm.calls == {"squeue": 2, "sacct": 1}


def test_all_ids_unknown_to_squeue_is_not_an_error(tmp_path: Path) -> None:
    runner = FakeSlurm(
        {
            "squeue": [fail("slurm_load_jobs error: Invalid job id specified")],
            "sacct": [ok("5|COMPLETED|0:0\n")],
        }
    )
    [status] = backend(tmp_path, runner).poll([JobHandle("slurm", "5")])
    assert status.state is JobState.SUCCEEDED and status.exit_code == 0


def test_exit_file_is_the_last_resort(tmp_path: Path) -> None:
    runner = FakeSlurm({"sbatch": [ok("5")], "squeue": [ok("")]})
    slurm = backend(tmp_path, runner, history="none")
    [handle] = slurm.submit([JobSpec("j", ["true"])])
    assert slurm.poll([handle])[0].state is JobState.UNKNOWN
    (Path(runner.argvs[0][-1]).parent / "exitcode").write_text("4\n")
    [status] = slurm.poll([handle])
    assert (status.state, status.exit_code) == (JobState.FAILED, 4)
    # A new backend (a resumed run) finds the job's directory from its id.
    again = backend(tmp_path, FakeSlurm({"squeue": [ok("")]}), history="none")
    assert again.poll([JobHandle("slurm", "5")])[0].exit_code == 4


def test_transient_errors_are_retried_with_backoff(tmp_path: Path) -> None:
    down = fail("sbatch: error: Batch job submission failed: Unable to contact slurm controller")
    runner = FakeSlurm(
        {
            "sbatch": [down, down, fail("Socket timed out on send/recv"), ok("9")],
            "squeue": [ok("3|seqera-submission=seqera-0123456789ab|\n")],  # someone else's
        }
    )
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("j", ["true"])])
    assert handle.native_id == "9"
    assert slurm.sleeps == [0.5, 1.0, 2.0]  # type: ignore[attr-defined]
    # each failure's outcome is unknown: the key was looked for before every resend
    assert slurm.calls == {"sacctmgr": 1, "sbatch": 4, "squeue": 3}
    assert [a[0] for a in runner.argvs] == ["sbatch", "squeue"] * 3 + ["sbatch"]


def test_retries_are_bounded_and_report_what_was_submitted(tmp_path: Path) -> None:
    busy = fail("Slurm temporarily unable to accept job, sleeping and retrying")
    runner = FakeSlurm({"sbatch": [ok("1"), busy], "squeue": [ok("")]})
    slurm = backend(tmp_path, runner, retry=RetryPolicy(attempts=3, first_delay=1, max_delay=1))
    with pytest.raises(SubmitError) as error:
        slurm.submit([JobSpec("a", ["true"]), JobSpec("b", ["true"]), JobSpec("c", ["true"])])
    assert [h.native_id for h in error.value.submitted] == ["1"]
    assert error.value.positions == (0,)
    assert error.value.unknown == ()  # the scheduler answered: "b" is not there, "c" unsent
    assert slurm.calls["sbatch"] == 4 and slurm.sleeps == [1, 1]  # type: ignore[attr-defined]


def test_permanent_errors_are_not_retried(tmp_path: Path) -> None:
    runner = FakeSlurm({"sbatch": [fail("sbatch: error: Invalid account or account/partition")]})
    slurm = backend(tmp_path, runner)
    with pytest.raises(SubmitError, match="Invalid account"):
        slurm.submit([JobSpec("a", ["true"])])
    assert slurm.calls["sbatch"] == 1


def test_a_refused_job_does_not_keep_the_others_from_going(tmp_path: Path) -> None:
    # Snakemake may hand the refused job over first: the jobs after it still go out, and
    # the error says which did (tests/faults/test_snakemake_refused.py met this order).
    refused = fail("sbatch: error: Batch job submission failed: Invalid account")
    runner = FakeSlurm({"sbatch": [refused, ok("2"), refused, ok("4")]})
    slurm = backend(tmp_path, runner)
    jobs = [JobSpec(name, ["true"]) for name in ("b", "a1", "c", "a2")]
    with pytest.raises(SubmitError, match=r"cannot submit 'b'.*Invalid account") as error:
        slurm.submit(jobs)
    assert [h.native_id for h in error.value.submitted] == ["2", "4"]
    assert error.value.positions == (1, 3) and error.value.unknown == ()
    assert slurm.calls["sbatch"] == 4  # none sent twice
    # an unreachable scheduler still stops the batch at once
    down = fail("sbatch: error: Batch job submission failed: Unable to contact slurm controller")
    unreachable = fail("squeue: error: Unable to contact slurm controller (connect failure)")
    runner = FakeSlurm({"sbatch": [refused, down], "squeue": [unreachable]})
    slurm = backend(tmp_path, runner, retry=RetryPolicy(attempts=2, first_delay=1, max_delay=1))
    with pytest.raises(SubmitError) as error:
        slurm.submit(jobs)
    assert error.value.positions == () and error.value.unknown == (1,)
    assert slurm.calls["sbatch"] == 2


def test_a_timed_out_submission_that_went_through_is_not_sent_twice(tmp_path: Path) -> None:
    runner = FakeSlurm({"sbatch": [CommandResult(["sbatch"], None)], "squeue": [listing(tmp_path)]})
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("a", ["true"])])
    assert handle.native_id == "12" and slurm.calls["sbatch"] == 1
    assert runner.argvs[1] == ["squeue", "-h", "--me", "-t", "all", "-O", "ArrayJobID:|,Comment:|"]


def listing(tmp_path: Path) -> Callable[[Sequence[str]], CommandResult]:
    """squeue's answer when the job in tmp_path/jobs went through as job 12."""

    def answer(argv: Sequence[str]) -> CommandResult:
        directory = next(iter(tmp_path.glob("jobs/*/job.sh"))).parent
        key = "seqera-" + directory.name.rpartition(".")[2]
        return ok(f"12|seqera-submission={key};team=x|\n13|other comment|\n14||\n")

    return answer


@pytest.mark.parametrize(
    "error",
    [
        "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller",
    ],
)
def test_an_ambiguous_error_with_an_exit_status_is_not_sent_twice(
    tmp_path: Path, error: str
) -> None:
    # Defect 2: slurmctld may accept the job and still fail the reply.
    runner = FakeSlurm({"sbatch": [fail(error), ok("99")], "squeue": [listing(tmp_path)]})
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("a", ["true"])])
    assert handle.native_id == "12" and slurm.calls == {"sacctmgr": 1, "sbatch": 1, "squeue": 1}


def test_no_resend_while_the_controller_cannot_be_asked(tmp_path: Path) -> None:
    down = fail("slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
    timeout = CommandResult(["sbatch"], None)
    runner = FakeSlurm({"sbatch": [timeout], "squeue": [down, down, down, ok("")]})
    slurm = backend(tmp_path, runner, retry=RetryPolicy(attempts=6, first_delay=1, max_delay=1))
    with pytest.raises(SubmitError):  # sent again only after squeue answered; timed out again
        slurm.submit([JobSpec("a", ["true"])])
    programs = [a[0] for a in runner.argvs]
    assert programs[:6] == ["sbatch", "squeue", "squeue", "squeue", "squeue", "sbatch"]
    # it never answered: the outcome is unknown and the error says which job
    runner = FakeSlurm({"sbatch": [ok("1"), timeout], "squeue": [down]})
    slurm = backend(tmp_path, runner, retry=RetryPolicy(attempts=3, first_delay=1, max_delay=1))
    with pytest.raises(SubmitError) as error:
        slurm.submit([JobSpec("a", ["true"]), JobSpec("b", ["true"])])
    assert error.value.positions == (0,) and error.value.unknown == (1,)
    assert slurm.calls == {"sacctmgr": 1, "sbatch": 2, "squeue": 3}


def test_cancel_is_one_scancel_and_tolerates_finished_jobs(tmp_path: Path) -> None:
    done = "scancel: error: Kill job error on job id 3: Job/step already completing or completed"
    runner = FakeSlurm({"scancel": [fail(done), fail("scancel: error: Access/permission denied")]})
    slurm = backend(tmp_path, runner)
    slurm.cancel([JobHandle("slurm", "3"), JobHandle("slurm", "4")])
    assert runner.argvs == [["scancel", "3", "4"]]
    with pytest.raises(SchedulerError, match="permission denied"):
        slurm.cancel([JobHandle("slurm", "5")])


def test_a_broken_squeue_is_an_error_not_an_unknown_state(tmp_path: Path) -> None:
    runner = FakeSlurm({"squeue": [CommandResult(["squeue"], 127, "", "No such file")]})
    with pytest.raises(SchedulerError, match="squeue failed"):
        backend(tmp_path, runner).poll([JobHandle("slurm", "1")])


def test_unreachable_controller_gives_unknown_not_an_exception(tmp_path: Path) -> None:
    down = fail("slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
    runner = FakeSlurm({"squeue": [down]})
    slurm = backend(tmp_path, runner, retry=RetryPolicy(attempts=2))
    [status] = slurm.poll([JobHandle("slurm", "1")])
    assert status.state is JobState.UNKNOWN and "Unable to contact" in (status.reason or "")
    assert slurm.calls == {"squeue": 2}


def test_over_memory_kill_is_read_from_the_log(tmp_path: Path) -> None:
    err = tmp_path / "err"
    err.write_text(
        "slurmstepd: error: Detected 1 oom-kill event(s)\n"
        "slurmstepd-localhost: error: Exceeded job memory limit\n"
    )
    runner = FakeSlurm(
        {"squeue": [ok("8|FAILED|JobLaunchFailure|9|\n")], "sacct": [fail(ACCOUNTING_DISABLED)]}
    )
    [status] = backend(tmp_path, runner).poll([JobHandle("slurm", "8", stderr=str(err))])
    assert status.out_of_memory and status.exit_code == 137


def test_logs_read_stdout_then_stderr(tmp_path: Path) -> None:
    (tmp_path / "o").write_text("out\n")
    (tmp_path / "e").write_text("err\n")
    slurm = backend(tmp_path, FakeSlurm({}))
    handle = JobHandle("slurm", "1", stdout=str(tmp_path / "o"), stderr=str(tmp_path / "e"))
    assert slurm.logs(handle) == "out\nerr\n"
    assert slurm.logs(JobHandle("slurm", "2", stdout=str(tmp_path / "missing"))) == ""


def test_a_hung_command_is_killed_with_its_children() -> None:
    start = time.monotonic()
    result = run_command(["sh", "-c", "sleep 30 & sleep 30"], 0.5, None, None)
    assert result.returncode is None and time.monotonic() - start < 5
    assert "timed out" in result.describe()
    assert run_command(["/nonexistent/sbatch"], 1, None, None).returncode == 127


@given(st.dictionaries(st.text(min_size=1), st.text()))
def test_label_encoding_round_trips_without_separators(labels: dict[str, str]) -> None:
    text = encode_labels(labels)
    assert decode_labels(text) == labels
    pairs = [p for p in text.split(";") if p]
    assert all(p.count("=") == 1 for p in pairs)
    assert not set(text) & set(",'\"\\ \n\r\t")


def test_shlex_quoting_is_what_the_script_uses() -> None:
    # The script runs shlex.join(command): check a nasty argv round-trips through sh.
    argv = ["printf", "%s\\n", "a b", "$HOME", "'q'", "\n"]
    out = subprocess.run(["sh", "-c", shlex.join(argv)], capture_output=True, text=True).stdout
    assert out == "a b\n$HOME\n'q'\n\n\n"


# Slurm 22.05 `squeue -h -r -t all -j 15_0,15_3,14 -O JobID:|,ArrayJobID:|,ArrayTaskID:|,
# State:|,Reason:|,exit_code:|` on the fixture cluster: a plain job, and two elements of
# an array whose own ids (16, 15) differ from the element names squeue -j takes.
SQUEUE_ARRAY = (
    "14|14|N/A|COMPLETED|None|0|\n16|15|0|COMPLETED|None|0|\n15|15|3|FAILED|NonZeroExitCode|768|\n"
)


def test_array_elements_are_named_as_squeue_takes_them() -> None:
    jobs = parse_squeue(SQUEUE_ARRAY)
    assert set(jobs) == {"14", "15_0", "15_3"}
    assert jobs["15_3"].state is JobState.FAILED and jobs["15_3"].exit_code == 3
    assert jobs["15_0"].state is JobState.SUCCEEDED


def test_a_job_that_went_through_and_left_squeue_is_found_by_its_start_mark(
    tmp_path: Path,
) -> None:
    # Found by the fault suite: sbatch hung past the timeout, the job ran, ended and was
    # purged (MinJobAge) before squeue was asked; its script's start mark still names it.
    def purged(argv: Sequence[str]) -> CommandResult:
        directory = next(iter(tmp_path.glob("jobs/*/job.sh"))).parent
        env = {"SLURM_JOB_ID": "31", "PATH": "/usr/bin:/bin"}
        subprocess.run(["sh", str(directory / "job.sh")], env=env, cwd=directory, check=True)
        return ok("")

    runner = FakeSlurm({"sbatch": [CommandResult(["sbatch"], None)], "squeue": [purged]})
    slurm = backend(tmp_path, runner)
    [handle] = slurm.submit([JobSpec("a", ["true"])])
    assert handle.native_id == "31" and slurm.calls == {"sacctmgr": 1, "sbatch": 1, "squeue": 1}
