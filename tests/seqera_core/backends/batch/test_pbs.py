"""PBS Pro and Torque without a server: argv, and parsers on recorded ``qstat`` outputs.

The PBS Pro outputs are in shared/fixtures/pbs (see its README for which are real
captures). The Torque text is real output of Debian's slurm-wlm-torque ``qstat -f``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from seqera_core.backends.base import (
    NODE_FAILURE,
    OTHER,
    OUT_OF_MEMORY,
    TIME_LIMIT,
    JobHandle,
    JobSpec,
    JobState,
)
from seqera_core.backends.batch._base import CommandResult, SchedulerError
from seqera_core.backends.batch.pbs import (
    PbsBackend,
    parse_pro_json,
    parse_torque,
    pbs_exit,
    pbs_job_name,
    submission_keys,
)
from seqera_core.errors import UsageError
from seqera_core.labels import decode_labels
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import GIB

FIXTURES = Path(__file__).parents[4] / "shared" / "fixtures" / "pbs"
POLARIS = "polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"
# Debian slurm-wlm-torque 22.05 `qstat -f 13` on a completed job (tabs as printed).
TORQUE_WRAPPER = (
    "Job Id:\t13\n\tJob_Name = tq\n\tJob_Owner = root@localhost\n\tjob_state = C\n"
    "\tqueue = debug\n\texec_host = localhost/2\n\tResource_List.walltime = 00:02:00\n"
    "\tResource_List.nodect = 1\n\tResource_List.ncpus = 2\n\n"
)
# Torque's own layout: four-space indent and, for completed jobs, exit_status.
TORQUE = (
    "Job Id: 21.head.cluster\n    Job_Name = a\n    job_state = C\n    exit_status = 2\n"
    "Job Id: 22.head.cluster\n    Job_Name = b\n    job_state = R\n"
    "Job Id: 23.head.cluster\n    Job_Name = c\n    job_state = C\n    exit_status = 271\n"
)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


class FakePbs:
    """Answers each program from a list of replies (the last one repeats), recording argv."""

    def __init__(self, replies: Mapping[str, Sequence[CommandResult]]) -> None:
        self.replies = {name: list(items) for name, items in replies.items()}
        self.argvs: list[list[str]] = []
        self.cwds: list[str | None] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, cwd: str | None, env: Mapping[str, str] | None
    ) -> CommandResult:
        assert isinstance(argv, list)
        self.argvs.append(list(argv))
        self.cwds.append(cwd)
        queue = self.replies[argv[0]]
        return queue.pop(0) if len(queue) > 1 else queue[0]


def result(stdout: str = "", stderr: str = "", code: int = 0) -> CommandResult:
    return CommandResult(["x"], code, stdout, stderr)


def pbs(tmp_path: Path, runner: FakePbs, dialect: str = "pro") -> PbsBackend:
    return PbsBackend(
        dialect=dialect, work_dir=tmp_path / "jobs", runner=runner, sleep=lambda _: None
    )


REQUEST = ResourceRequest(
    cpus=2,
    memory=3 * GIB,
    time=5400,
    accelerator=Accelerator(1),
    queue="workq",
    account="proj",
    extra={"pbs.project": "p1"},
    labels={"run": "r,1"},
)


def test_pro_submission_argv(tmp_path: Path) -> None:
    runner = FakePbs({"qsub": [result("1234.pbs01\n")]})
    spec = JobSpec("3 bad name!", ["true"], REQUEST, labels={"team": "a'b\"c"})
    [handle] = pbs(tmp_path, runner).submit([spec])
    argv = runner.argvs[0]
    assert argv[:3] == ["qsub", "-N", "j3_bad_name_"]
    assert argv[3:7] == ["-o", "stdout", "-e", "stderr"]  # relative to qsub's cwd
    assert runner.cwds[0] == str(Path(argv[-1]).parent)
    assert argv[7:9] == ["-k", "doe"]
    joined = " ".join(argv)
    assert "-l select=1:ncpus=2:mem=3072mb:ngpus=1 -l walltime=01:30:00" in joined
    assert "-q workq -A proj -P p1" in joined
    key, labels = argv[argv.index("-v") + 1].split(",")
    assert key == "SEQERA_SUBMISSION=seqera-" + Path(argv[-1]).parent.name.rpartition(".")[2]
    assert labels.startswith("SEQERA_LABELS=")
    assert not set(labels) & set(",'\"\\")  # nothing qsub -v would parse
    assert decode_labels(labels.removeprefix("SEQERA_LABELS=")) == {
        "run": "r,1",
        "team": "a'b\"c",
    }
    assert handle.native_id == "1234.pbs01" and handle.backend == "pbs"


def test_torque_submission_argv(tmp_path: Path) -> None:
    runner = FakePbs({"qsub": [result("17\n")]})
    [handle] = pbs(tmp_path, runner, "torque").submit([JobSpec("t", ["true"], REQUEST)])
    argv = runner.argvs[0]
    assert argv[argv.index("-l") + 1] == "nodes=1:ppn=2:gpus=1,mem=3072mb,walltime=01:30:00"
    assert "-v" not in argv and "-k" not in argv
    assert handle.backend == "torque"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("align", "align"),
        ("bwa mem|sort", "bwa_mem_sort"),
        ("1st", "j1st"),
        ("_x", "j_x"),
        ("", "job"),
        ("a.b+c-d_e", "a.b+c-d_e"),
        ("x" * 300, "x" * 230),
    ],
)
def test_job_names_follow_check_job_name(name: str, expected: str) -> None:
    assert pbs_job_name(name) == expected


def test_queued_and_held_from_a_real_polaris_capture() -> None:
    jobs = parse_pro_json(fixture("queued.json"))
    queued = jobs[f"359322.{POLARIS}"]
    assert queued.state is JobState.PENDING
    assert queued.reason == "Not Running: Job is requesting an exclusive node and node is in use"
    held = jobs[f"412020.{POLARIS}"]  # held after failed starts: Exit_status -3, not finished
    assert held.state is JobState.PENDING and held.exit_code is None
    assert held.reason == "job held, too many failed attempts to run"


def test_running_from_a_real_capture() -> None:
    [(job_id, running)] = parse_pro_json(fixture("running.json")).items()
    assert job_id == "1.pbs" and running.state is JobState.RUNNING and running.exit_code is None


def test_finished_from_a_real_capture() -> None:
    jobs = parse_pro_json(fixture("finished.json"))
    assert {k: (v.state, v.exit_code) for k, v in jobs.items()} == {
        "1004.pbs": (JobState.SUCCEEDED, 0),
        "1005.pbs": (JobState.SUCCEEDED, 0),
        "1006.pbs": (JobState.RUNNING, None),
    }


def test_failed_jobs() -> None:
    jobs = parse_pro_json(fixture("failed.json"))
    assert (jobs["1010.pbs"].state, jobs["1010.pbs"].exit_code) == (JobState.FAILED, 3)
    walltime = jobs["1011.pbs"]
    assert walltime.state is JobState.FAILED and walltime.time_limit and not walltime.out_of_memory
    memory = jobs["1012.pbs"]
    assert memory.out_of_memory and memory.exit_code is None and memory.reason == "out of memory"
    killed = jobs["1013.pbs"]
    assert (killed.exit_code, killed.reason) == (137, "killed by SIGKILL")


def test_deleted_jobs() -> None:
    jobs = parse_pro_json(fixture("deleted.json"))
    running = jobs["1020.pbs"]
    assert running.state is JobState.CANCELLED and running.exit_code == 143
    queued = jobs["1021.pbs"]
    assert queued.state is JobState.CANCELLED and queued.exit_code is None


def test_exit_status_rules() -> None:
    assert pbs_exit(0).state is JobState.SUCCEEDED
    assert pbs_exit(-1).reason is not None and pbs_exit(-1).reason.startswith("JOB_EXEC_FAIL1")
    assert pbs_exit(-99).reason == "PBS exit status -99"
    assert pbs_exit(None).state is JobState.FAILED  # the exit file decides later
    assert pbs_exit(271, 92, "x and exceeded resource walltime").time_limit


def test_no_jobs_key_when_nothing_matched() -> None:
    assert parse_pro_json('{"timestamp":1,"pbs_version":"2024.1.2","pbs_server":"s"}') == {}
    assert parse_pro_json("") == {}


def test_torque_text() -> None:
    wrapper = parse_torque(TORQUE_WRAPPER)
    assert wrapper["13"].state is JobState.FAILED and wrapper["13"].exit_code is None
    jobs = parse_torque(TORQUE)
    assert (jobs["21.head.cluster"].state, jobs["21.head.cluster"].exit_code) == (
        JobState.FAILED,
        2,
    )
    assert jobs["22.head.cluster"].state is JobState.RUNNING
    assert jobs["23.head.cluster"].exit_code == 143


def test_poll_is_one_qstat_for_many_and_tolerates_unknown_ids(tmp_path: Path) -> None:
    runner = FakePbs(
        {"qstat": [result(fixture("finished.json"), "qstat: Unknown Job Id 9.pbs\n", 35)]}
    )
    backend = pbs(tmp_path, runner)
    handles = [JobHandle("pbs", i) for i in ("1004.pbs", "1006", "9.pbs")]
    statuses = backend.poll(handles)
    assert [s.state for s in statuses] == [JobState.SUCCEEDED, JobState.RUNNING, JobState.UNKNOWN]
    assert runner.argvs == [["qstat", "-x", "-f", "-F", "json", "1004.pbs", "1006", "9.pbs"]]
    backend.poll(handles)
    assert runner.argvs[-1][-2:] == ["1006", "9.pbs"]  # finished jobs are not asked again


def test_qstat_failures(tmp_path: Path) -> None:
    unknown = FakePbs({"qstat": [result("", "qstat: Unknown Job Id 9.pbs\n", 153)]})
    assert pbs(tmp_path, unknown).poll([JobHandle("pbs", "9.pbs")])[0].state is JobState.UNKNOWN
    broken = FakePbs({"qstat": [result("{not json")]})
    with pytest.raises(SchedulerError, match="not understood"):
        pbs(tmp_path, broken).poll([JobHandle("pbs", "1.pbs")])
    server_down = FakePbs(
        {
            "qstat": [
                result(
                    "", "Connection refused\nqstat: cannot connect to server pbs01 (errno=111)", 2
                )
            ]
        }
    )
    backend = PbsBackend(work_dir=tmp_path, runner=server_down, sleep=lambda _: None)
    [status] = backend.poll([JobHandle("pbs", "1.pbs")])
    assert status.state is JobState.UNKNOWN and "cannot connect" in (status.reason or "")
    assert backend.calls["qstat"] == 6  # the default RetryPolicy's attempts


def test_torque_completed_without_exit_status_reads_the_exit_file(tmp_path: Path) -> None:
    runner = FakePbs(
        {"qsub": [result("13\n")], "qstat": [result(TORQUE_WRAPPER)], "qdel": [result()]}
    )
    backend = pbs(tmp_path, runner, "torque")
    [handle] = backend.submit([JobSpec("t", ["true"])])
    (Path(runner.argvs[0][-1]).parent / "exitcode").write_text("0\n")
    [status] = backend.poll([handle])
    assert (status.state, status.exit_code) == (JobState.SUCCEEDED, 0)


def test_torque_job_we_cancelled_is_cancelled(tmp_path: Path) -> None:
    runner = FakePbs({"qstat": [result(TORQUE_WRAPPER)], "qdel": [result(code=1)]})
    backend = pbs(tmp_path, runner, "torque")
    backend.cancel([JobHandle("torque", "13"), JobHandle("torque", "14")])
    assert runner.argvs == [["qdel", "13", "14"]]
    assert backend.poll([JobHandle("torque", "13")])[0].state is JobState.CANCELLED


def test_qdel_errors(tmp_path: Path) -> None:
    done = FakePbs({"qdel": [result(stderr="qdel: Job has finished 1.pbs\n", code=35)]})
    pbs(tmp_path, done).cancel([JobHandle("pbs", "1.pbs")])
    denied = FakePbs({"qdel": [result(stderr="qdel: Unauthorized Request 1.pbs\n", code=159)]})
    with pytest.raises(SchedulerError, match="Unauthorized"):
        pbs(tmp_path, denied).cancel([JobHandle("pbs", "1.pbs")])


def test_dialect_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dialect"):
        PbsBackend(dialect="sge", work_dir=tmp_path)


def test_pro_arrays_one_qsub_per_shape_and_subjob_ids(tmp_path: Path) -> None:
    runner = FakePbs({"qsub": [result("1234[].pbs01\n")], "qstat": [result(fixture("array.json"))]})
    backend = PbsBackend(
        dialect="pro",
        work_dir=tmp_path / "jobs",
        runner=runner,
        sleep=lambda _: None,
        squash=SquashPolicy("array"),
    )
    request = ResourceRequest(cpus=1, memory=GIB, time=600, queue="workq")
    specs = [JobSpec(f"smk-wide-{i}", ["sh", "-c", f"exit {i}"], request) for i in range(3)]
    handles = backend.submit(specs)
    assert [h.native_id for h in handles] == [f"1234[{i}].pbs01" for i in range(3)]
    [argv] = runner.argvs
    assert argv[:3] == ["qsub", "-J", "0-2"]
    out = argv[argv.index("-o") + 1]
    assert out.endswith("/^array_index^.out") and argv[argv.index("-e") + 1].endswith(".err")
    script = Path(argv[-1]).read_text()
    assert '"${PBS_ARRAY_INDEX}".dir/job.sh' in script
    directory = Path(out).parent
    assert (directory / "1.out").resolve() == Path(handles[1].stdout or "").resolve()
    statuses = backend.poll(handles)
    assert [(s.state, s.exit_code) for s in statuses] == [
        (JobState.SUCCEEDED, 0),
        (JobState.FAILED, 1),
        (JobState.RUNNING, None),
    ]
    assert runner.argvs[-1][:5] == ["qstat", "-x", "-f", "-F", "json"]


def test_torque_refuses_array_mode(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="'array' is not supported on torque"):
        PbsBackend(dialect="torque", work_dir=tmp_path, squash=SquashPolicy("array"))
    # squash mode submits its allocations one by one there
    assert not PbsBackend(
        dialect="torque", work_dir=tmp_path, squash=SquashPolicy("squash")
    )._ARRAYS


def _with_key(name: str, job_id: str, key: str) -> str:
    # a real capture, with the variable qsub -v SEQERA_SUBMISSION=<key> would add
    document = json.loads(fixture(name))
    document["Jobs"][job_id]["Variable_List"]["SEQERA_SUBMISSION"] = key
    return json.dumps(document)


def test_submission_keys_are_read_from_variable_list_and_job_names() -> None:
    assert submission_keys(fixture("finished.json")) == {}  # no job of ours there
    text = _with_key("finished.json", "1005.pbs", "seqera-00aa11bb22cc")
    assert submission_keys(text) == {"seqera-00aa11bb22cc": "1005.pbs"}
    torque = TORQUE_WRAPPER.replace("Job_Name = tq", "Job_Name = tq.seqera-00aa11bb22cc-r1")
    assert submission_keys(torque, "torque") == {"seqera-00aa11bb22cc-r1": "13"}
    assert submission_keys(TORQUE_WRAPPER, "torque") == {}


def test_a_pro_submission_that_timed_out_but_went_through_is_not_sent_twice(
    tmp_path: Path,
) -> None:
    # Defect 2 (pbs.py never looked): qsub timed out after the server queued the job.
    timeout = CommandResult(["qsub"], None)

    class Listing(FakePbs):
        def __call__(
            self,
            argv: Sequence[str],
            timeout: float,
            cwd: str | None,
            env: Mapping[str, str] | None,
        ) -> CommandResult:
            if argv[0] == "qstat":
                self.argvs.append(list(argv))
                key = "seqera-" + next(tmp_path.glob("jobs/*/job.sh")).parent.name.split(".")[-1]
                return result(_with_key("finished.json", "1005.pbs", key))
            return super().__call__(argv, timeout, cwd, env)

    runner = Listing({"qsub": [timeout, result("77.pbs\n")]})
    [handle] = pbs(tmp_path, runner).submit([JobSpec("a", ["true"])])
    assert handle.native_id == "1005.pbs"
    assert [a[0] for a in runner.argvs] == ["qsub", "qstat"]
    assert runner.argvs[1] == ["qstat", "-x", "-f", "-F", "json"]


def test_torque_carries_its_key_in_the_job_name(tmp_path: Path) -> None:
    runner = FakePbs({"qsub": [result("Connection refused", code=1), result("18\n")],
                      "qstat": [result(TORQUE_WRAPPER)]})  # fmt: skip
    [handle] = pbs(tmp_path, runner, "torque").submit([JobSpec("t", ["true"])])
    first, listing, second = runner.argvs
    name = first[first.index("-N") + 1]
    assert name.startswith("t.seqera-") and listing == ["qstat", "-f", "-1"]
    assert second == first and handle.native_id == "18"  # not there: sent again, same key


def test_a_mother_superior_failure_is_a_node_failure_with_its_host() -> None:
    seen = pbs_exit(-20)
    assert seen.final_cause == NODE_FAILURE and seen.state is JobState.FAILED
    # what baw-server's users met in production (see shared/fixtures/pbs/README.md)
    assert pbs_exit(-32).final_cause == NODE_FAILURE
    assert pbs_exit(-31).final_cause == OUT_OF_MEMORY
    assert pbs_exit(-27).final_cause == OUT_OF_MEMORY
    assert pbs_exit(-29).final_cause == TIME_LIMIT
    assert pbs_exit(3).final_cause == OTHER and pbs_exit(0).final_cause is None
    jobs = parse_pro_json(fixture("finished.json"))
    assert jobs["1004.pbs"].node == "pbs"  # exec_host "pbs/0"
    assert parse_pro_json(fixture("running.json"))["1.pbs"].node == "pbs"  # while it runs


def test_a_node_failure_on_pbs_is_sent_again_once(tmp_path: Path) -> None:
    failed = json.loads(fixture("failed.json"))
    job = failed["Jobs"]["1010.pbs"]
    job["Exit_status"] = -20
    runner = FakePbs(
        {
            "qsub": [result("1010.pbs\n"), result("1011.pbs\n")],
            "qstat": [result(json.dumps(failed)), result(fixture("finished.json"))],
        }
    )
    backend = pbs(tmp_path, runner)
    [handle] = backend.submit([JobSpec("a", ["true"])])
    [status] = backend.poll([handle])
    assert status.state is JobState.PENDING and status.resubmissions == 1
    assert "node failure on pbs" in (status.reason or "")
    assert [a[0] for a in runner.argvs].count("qsub") == 2
