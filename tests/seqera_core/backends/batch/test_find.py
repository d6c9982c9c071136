"""``find(keys)`` on the batch backends: a new process (a restarted sidecar) learns which of
its callers' keys went out, from one listing of the scheduler's submission keys.

Driven through SlurmBackend and PbsBackend with scripted runners that keep what was
submitted (the listing answers with the comments and variables sbatch/qsub were given),
and the parsers over a real ``squeue`` capture; the real daemons are exercised in
tests/integration (test_slurm_arrays, test_torque) and tests/faults/test_sidecar_crash.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from seqera_core.backends.base import JobSpec, NoLookup
from seqera_core.backends.batch._base import CommandResult, SchedulerError
from seqera_core.backends.batch._jobdir import submission_key
from seqera_core.backends.batch._verbs import BatchVerbs
from seqera_core.backends.batch.pbs import PbsBackend
from seqera_core.backends.batch.slurm import (
    SlurmBackend,
    parse_sacct_keys,
    parse_squeue_keys,
    submission_key_of,
)
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy

from .test_slurm import DATA, FakeSlurm, backend, fail, ok

# Recorded from the one-node fixture cluster (slurm-wlm 22.05.8): `squeue -h --me -t all
# -O ArrayJobID:|,Comment:|` with slurm-up.sh's smoke job (no comment), a two-element
# array carrying labels (both elements running, one line each) and a job alone.
SQUEUE_KEYS = (DATA / "squeue-keys.txt").read_text()


def test_the_listing_is_read_from_a_real_squeue_capture() -> None:
    assert parse_squeue_keys(SQUEUE_KEYS) == {
        "seqera-b6746e183225": "2",
        "seqera-294982291a19": "3",
    }


def test_sacct_names_an_array_by_its_own_id() -> None:
    # sacct -n -P -X -o JobID,Comment, in the format of `man sacct` (no capture: the
    # fixture cluster's slurmdbd does not keep comments): elements 7_0, pending 7_[1-3].
    text = (
        "5|seqera-submission=seqera-aaaaaaaaaaaa;run=r1\n"
        "7_0|seqera-submission=seqera-bbbbbbbbbbbb\n"
        "7_[1-3]|seqera-submission=seqera-bbbbbbbbbbbb\n"
        "8|\n9|somebody else's comment\n"
    )
    assert parse_sacct_keys(text) == {"seqera-aaaaaaaaaaaa": "5", "seqera-bbbbbbbbbbbb": "7"}


class Slurm:
    """sbatch that keeps each submission's comment; squeue lists what it kept."""

    def __init__(self, first_id: int = 40) -> None:
        self.jobs: list[tuple[str, str]] = []
        self.next = first_id

    def sbatch(self, argv: Sequence[str]) -> CommandResult:
        comment = next(a for a in argv if a.startswith("--comment=")).partition("=")[2]
        job_id, self.next = str(self.next), self.next + 1
        self.jobs.append((job_id, comment))
        return ok(f"{job_id}\n")

    def squeue(self, argv: Sequence[str]) -> CommandResult:
        assert argv[:2] == ["squeue", "-h"] and "ArrayJobID:|,Comment:|" in argv
        return ok("".join(f"{job_id}|{comment}|\n" for job_id, comment in self.jobs))


def _spec(name: str, key: str | None, cpus: float = 1) -> JobSpec:
    return JobSpec(name, ["true"], ResourceRequest(cpus=cpus, time=60), key=key)


def test_a_new_backend_finds_jobs_and_array_elements_by_the_callers_keys(
    tmp_path: Path,
) -> None:
    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch], "squeue": [scheduler.squeue]})
    first = backend(tmp_path, runner, squash=SquashPolicy("array"))
    specs = [_spec("a", "k-a"), _spec("b", "k-b"), _spec("c", "k-c", cpus=2), _spec("d", None)]
    handles = first.submit(specs)
    assert [h.native_id for h in handles] == ["40_0", "40_1", "41", "40_2"]
    again = backend(tmp_path, runner)
    found = again.find(["k-a", "k-b", "k-c", "k-never"])
    assert found == {"k-a": handles[0], "k-b": handles[1], "k-c": handles[2]}
    assert again.calls == {"squeue": 1}  # one listing for every key
    # a key this directory never recorded is answered without asking the scheduler
    assert backend(tmp_path, runner).find(["k-never"]) == {}


def test_a_job_the_scheduler_never_got_is_not_found(tmp_path: Path) -> None:
    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch], "squeue": [scheduler.squeue]})
    [handle] = backend(tmp_path, runner).submit([_spec("a", "k-a")])
    scheduler.jobs.clear()  # as if sbatch had died before slurmctld took the job
    runner.replies["sacct"] = [ok("")]
    assert backend(tmp_path, runner).find(["k-a"]) == {}
    sacct = runner.argvs[-1]
    assert sacct[:3] == ["sacct", "-n", "-P"] and sacct[-2:] == ["-o", "JobID,Comment"]
    assert handle.native_id == "40"


def test_a_job_that_left_the_listing_is_found_by_sacct_or_its_start_mark(
    tmp_path: Path,
) -> None:
    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch], "squeue": [scheduler.squeue]})
    handles = backend(tmp_path, runner).submit([_spec("a", "k-a"), _spec("b", "k-b")])
    kept, scheduler.jobs[:] = list(scheduler.jobs), []  # both purged from squeue (MinJobAge)
    # a: cancelled while pending, so never started; slurmdbd still has its comment
    runner.replies["sacct"] = [ok(f"{kept[0][0]}|{kept[0][1]}\n")]
    # b: ran; its script marked its directory on starting
    directory = Path(handles[1].stdout or "").parent
    env = {"SLURM_JOB_ID": kept[1][0], "PATH": "/usr/bin:/bin"}
    subprocess.run(["sh", str(directory / "job.sh")], env=env, cwd=directory, check=True)
    found = backend(tmp_path, runner).find(["k-a", "k-b"])
    assert found == {"k-a": handles[0], "k-b": handles[1]}


def test_the_latest_run_of_a_job_sent_again_after_a_node_failure_is_found(
    tmp_path: Path,
) -> None:
    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch], "squeue": [scheduler.squeue]})
    [handle] = backend(tmp_path, runner).submit([_spec("a", "k-a")])
    key = submission_key(Path(handle.stdout or "").parent)
    assert submission_key_of(scheduler.jobs[0][1]) == key
    scheduler.jobs.append(("57", f"seqera-submission={key}-r1"))  # its resubmission
    [found] = backend(tmp_path, runner).find(["k-a"]).values()
    assert found.native_id == "57"


def test_no_answer_is_an_error_never_an_empty_answer(tmp_path: Path) -> None:
    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch], "squeue": [fail("Socket timed out")]})
    backend(tmp_path, runner).submit([_spec("a", "k-a")])
    with pytest.raises(SchedulerError, match="did not list"):
        backend(tmp_path, runner).find(["k-a"])


def test_a_controller_that_timed_out_is_asked_again(tmp_path: Path) -> None:
    # a rerun's first lookup, while a busy slurmctld times out: it must not conclude
    # that nothing was sent (every job would go out twice) nor fail the run
    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch],
                        "squeue": [fail("Socket timed out"), scheduler.squeue]})  # fmt: skip
    [sent] = backend(tmp_path, runner).submit([_spec("a", "k-a")])
    calls = len(runner.argvs)
    assert backend(tmp_path, runner).find(["k-a"]) == {"k-a": sent}
    assert [a[0] for a in runner.argvs[calls:]] == ["squeue", "squeue"]


class Pbs:
    """qsub that keeps each job's key (Pro: ``-v SEQERA_SUBMISSION``; Torque: the end of
    its name); qstat lists what it kept, in each dialect's format."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.jobs: list[str] = []

    def qsub(self, argv: Sequence[str]) -> CommandResult:
        job_id = f"{len(self.jobs) + 7}.server"
        if self.dialect == "pro":
            variables = dict(v.split("=", 1) for v in argv[argv.index("-v") + 1].split(","))
            body = {"Job_Name": "x", "Variable_List": variables, "job_state": "Q"}
            self.jobs.append(json.dumps({job_id: body})[1:-1])
        else:
            self.jobs.append(f"Job Id: {job_id}\n    Job_Name = {argv[argv.index('-N') + 1]}\n")
        return ok(f"{job_id}\n")

    def qstat(self, argv: Sequence[str]) -> CommandResult:
        if self.dialect == "pro":
            return ok('{"Jobs": {' + ",".join(self.jobs) + "}}")
        return ok("".join(self.jobs))


@pytest.mark.parametrize("dialect", ["pro", "torque"])
def test_pbs_pro_and_torque_find_from_one_qstat(tmp_path: Path, dialect: str) -> None:
    server = Pbs(dialect)
    runner = FakeSlurm({"qsub": [server.qsub], "qstat": [server.qstat]})  # any program
    first = PbsBackend(dialect=dialect, work_dir=tmp_path, runner=runner)
    handles = first.submit([_spec("a", "k-a"), _spec("b", None)])
    again = PbsBackend(dialect=dialect, work_dir=tmp_path, runner=runner)
    assert again.find(["k-a", "k-z"]) == {"k-a": handles[0]}
    assert again.calls == {"qstat": 1}


def test_a_scheduler_without_a_listing_says_it_cannot_look_up(tmp_path: Path) -> None:
    class Blind(SlurmBackend):
        def _keys(self) -> dict[str, str] | None:
            return BatchVerbs._keys(self)  # the base's default

    scheduler = Slurm()
    runner = FakeSlurm({"sbatch": [scheduler.sbatch], "squeue": [scheduler.squeue]})
    blind = Blind(work_dir=tmp_path / "jobs", runner=runner)
    blind.submit([_spec("a", "k-a")])
    with pytest.raises(NoLookup, match="cannot"):
        blind.find(["k-a"])
