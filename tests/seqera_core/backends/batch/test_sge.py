"""Grid Engine without a cell: argv, and parsers on outputs recorded from a real one
(data/sge/README.md says which jobs and commands; the cell itself runs in
tests/integration/sge)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.backends.base import JobSpec, JobState
from seqera_core.backends.batch._base import SchedulerError
from seqera_core.backends.batch.sge import (
    SgeBackend,
    parse_qacct,
    parse_qhost,
    parse_qstat,
    parse_submit,
    sge_state,
    submission_keys,
)
from seqera_core.errors import ResourceError, UsageError
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import GIB, MIB

from .replies import Replies, result

DATA = Path(__file__).parent / "data" / "sge"


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def sge(tmp_path: Path, runner: Replies, **options: object) -> SgeBackend:
    return SgeBackend(work_dir=tmp_path / "jobs", runner=runner, sleep=lambda _: None,
                      **options)  # type: ignore[arg-type]  # fmt: skip


REQUEST = ResourceRequest(
    cpus=3,
    memory=3 * GIB,
    time=5400,
    accelerator=Accelerator(1),
    queue="long.q",
    account="genomics",
    extra={"sge.pe": "mpi", "sge.extra": "-l scratch=10G -p -5"},
    labels={"team": "a,b"},
)


def test_submit_argv_gives_every_path_the_key_and_memory_per_slot(tmp_path: Path) -> None:
    runner = Replies({"qsub": [result("17\n")]})
    spec = JobSpec("rule/a b", ["echo", "hi"], REQUEST, labels={"team": "a,b"})
    [handle] = sge(tmp_path, runner, memory="m_mem_free").submit([spec])
    argv = runner.argvs[0]
    assert handle.native_id == "17"
    assert argv[:4] == ["qsub", "-terse", "-N", "rule_a_b"]
    context = argv[argv.index("-ac") + 1].split(",")
    assert context[0].startswith("SEQERA_SUBMISSION=seqera-")
    assert "team=a%2Cb" in context  # a comma would split the context list
    assert argv[argv.index("-pe") + 1 : argv.index("-pe") + 3] == ["mpi", "3"]
    # 3 GiB over 3 slots, in the site's resource
    assert "h_rt=1:30:00,m_mem_free=1024M,gpu=1" in argv
    assert argv[argv.index("-q") : argv.index("-q") + 4] == ["-q", "long.q", "-P", "genomics"]
    at = argv.index("scratch=10G")
    assert argv[at - 1 : at + 3] == ["-l", "scratch=10G", "-p", "-5"]  # sge_extra, as split
    directory = Path(argv[-1]).parent
    assert argv[argv.index("-wd") + 1] == str(directory)  # never $HOME
    assert (
        argv[argv.index("-o") + 1] == handle.stdout and argv[argv.index("-e") + 1] == handle.stderr
    )
    assert argv[-1] == str(directory / "job.sh")


def test_sge_extra_cannot_move_the_outputs(tmp_path: Path) -> None:
    runner = Replies({"qsub": [result("1\n")]})
    bad = ResourceRequest(extra={"sge.extra": "-o /elsewhere"})
    with pytest.raises(UsageError, match="sge_extra"):
        sge(tmp_path, runner).submit([JobSpec("x", ["true"], bad)])
    assert runner.argvs == []  # nothing sent


def test_a_site_resource_name_is_checked() -> None:
    with pytest.raises(ResourceError, match=r"sge\.memory"):
        SgeBackend(memory="h_vmem=1G")


def test_an_array_numbers_its_tasks_from_one(tmp_path: Path) -> None:
    runner = Replies({"qsub": [result("6.1-3:1\n")]})
    backend = sge(tmp_path, runner, squash=SquashPolicy("array", max_jobs=10))
    specs = [JobSpec(f"e{i}", ["true"], ResourceRequest(memory=64 * MIB)) for i in range(3)]
    handles = backend.submit(specs)
    argv = runner.argvs[0]
    assert [h.native_id for h in handles] == ["6.1", "6.2", "6.3"]
    assert argv[argv.index("-t") + 1] == "1-3"
    out = argv[argv.index("-o") + 1]
    assert out.endswith("/$TASK_ID.out")
    array = Path(argv[-1]).parent
    assert (array / "1.dir").resolve() == Path(handles[0].stdout or "").parent.resolve()
    assert '/"${SGE_TASK_ID}".dir/job.sh' in (array / "array.sh").read_text()


def test_parse_submit() -> None:
    assert parse_submit("17\n") == "17"
    assert parse_submit("6.1-3:1\n") == "6"
    with pytest.raises(SchedulerError):
        parse_submit("Your job 17 has been submitted\n")


def test_states_from_recorded_qstat() -> None:
    jobs = parse_qstat(recorded("qstat-running-pending-array.xml"))
    assert {k: v.state for k, v in jobs.items()} == {
        "6.1": JobState.RUNNING,
        "6.2": JobState.RUNNING,
        "6.3": JobState.RUNNING,
        "7": JobState.RUNNING,
        "8": JobState.PENDING,
    }
    assert jobs["7"].node == "vm"
    ranged = parse_qstat(recorded("qstat-array-range.xml"))
    assert [k for k in ranged if k.startswith("9.")] == [f"9.{n}" for n in range(1, 7)]
    assert ranged["9.1"].state is JobState.RUNNING and ranged["9.4"].state is JobState.PENDING
    error = parse_qstat(recorded("qstat-eqw.xml"))["7"]
    assert error.state is JobState.FAILED and error.reason == "error state"


@pytest.mark.parametrize(
    ("letters", "state"),
    [("qw", JobState.PENDING), ("hqw", JobState.PENDING), ("r", JobState.RUNNING),
     ("t", JobState.RUNNING), ("dr", JobState.RUNNING), ("Rr", JobState.RUNNING),
     ("s", JobState.RUNNING), ("Eqw", JobState.FAILED), ("x", JobState.UNKNOWN)],
)  # fmt: skip
def test_state_letters(letters: str, state: JobState) -> None:
    assert sge_state(letters).state is state


def test_context_keys_from_recorded_qstat_j() -> None:
    assert submission_keys(recorded("qstat-j-all.xml")) == {
        "seqera-eqw": "7",
        "seqera-sl": "8",
        "seqera-arr2": "9",
    }


def test_exit_codes_and_usage_from_recorded_qacct() -> None:
    ((seen, (wall, peak, cpu)),) = parse_qacct(recorded("qacct-exit3-pe2.txt")).values()
    assert (seen.state, seen.exit_code, wall, cpu) == (JobState.FAILED, 3, 3.0, 0.089)
    assert peak == round(55.391 * MIB) and not seen.out_of_memory and not seen.time_limit
    tasks = parse_qacct(recorded("qacct-array.txt"))
    assert sorted(tasks) == [f"9.{n}" for n in range(1, 7)]
    assert all(s.state is JobState.SUCCEEDED for s, _ in tasks.values())


def test_an_h_vmem_kill_and_an_h_rt_kill_are_told_apart() -> None:
    # both read "failed 37 : qmaster enforced h_rt, h_cpu, or h_vmem limit", exit 137
    ((memory, (_, peak, _)),) = parse_qacct(recorded("qacct-h_vmem-kill.txt")).values()
    assert memory.out_of_memory and not memory.time_limit and memory.exit_code == 137
    assert memory.reason == "out of memory" and peak and peak > 100 * MIB
    ((timed, (wall, _, _)),) = parse_qacct(recorded("qacct-h_rt-kill.txt")).values()
    assert timed.time_limit and not timed.out_of_memory and wall == 2.0
    assert timed.reason == "time limit reached"


def test_a_deleted_job_and_one_that_never_started() -> None:
    ((deleted, _),) = parse_qacct(recorded("qacct-qdel.txt")).values()
    assert deleted.state is JobState.FAILED and deleted.exit_code == 137
    ((never, (_, peak, _)),) = parse_qacct(recorded("qacct-eqw-deleted.txt")).values()
    assert never.state is JobState.FAILED and never.exit_code is None and peak is None
    assert never.reason == "changing into working directory"


def test_a_job_in_error_is_failed_with_its_reason_and_deleted(tmp_path: Path) -> None:
    runner = Replies({
        "qsub": [result("7\n")],
        "qstat": [result(recorded("qstat-eqw.xml")), result(recorded("qstat-j-eqw.xml"))],
        "qdel": [result("root has deleted job 7\n")],
    })  # fmt: skip
    backend = sge(tmp_path, runner)
    [handle] = backend.submit([JobSpec("lost", ["true"], ResourceRequest())])
    [status] = backend.poll([handle])
    assert status.state is JobState.FAILED
    assert "can't chdir to /nonexistent/dir" in (status.reason or "")
    assert runner.argvs[1][:2] == ["qstat", "-xml"] and runner.argvs[2][:3] == ["qstat", "-j", "7"]
    assert runner.argvs[3] == ["qdel", "7"]
    assert backend.poll([handle]) == [status] and len(runner.argvs) == 4  # not asked again


def test_one_qstat_per_poll_and_one_qacct_for_what_ended(tmp_path: Path) -> None:
    runner = Replies({
        "qsub": [result("4\n"), result("5\n"), result("8\n")],
        "qstat": [result(recorded("qstat-running-pending-array.xml"))],
        "qacct": [result(recorded("qacct-h_rt-kill.txt") + recorded("qacct-h_vmem-kill.txt"))],
    })  # fmt: skip
    backend = sge(tmp_path, runner)
    handles = backend.submit([JobSpec(n, ["true"], ResourceRequest()) for n in "abc"])
    timed, memory, pending = backend.poll(handles)
    assert [a[0] for a in runner.argvs[3:]] == ["qstat", "qacct"]
    qacct = runner.argvs[-1]
    assert qacct[:6] == ["qacct", "-o", backend._user, "-j", "*", "-E"]
    assert timed.time_limit and memory.out_of_memory and pending.state is JobState.PENDING
    assert memory.peak_memory_bytes and timed.wall_seconds == 2.0


def test_qdel_of_jobs_that_already_ended_is_not_an_error(tmp_path: Path) -> None:
    qdel = result(recorded("qdel-mixed.stdout"), recorded("qdel-mixed.stderr"), code=1)
    runner = Replies({"qsub": [result("8\n"), result("7\n"), result("1\n")], "qdel": [qdel]})
    backend = sge(tmp_path, runner)
    handles = backend.submit([JobSpec(n, ["true"], ResourceRequest()) for n in "abc"])
    backend.cancel(handles)
    assert runner.argvs[-1] == ["qdel", "8", "7", "1"]
    runner.replies["qdel"] = [result("", "error: unable to contact qmaster\n", code=1)]
    with pytest.raises(SchedulerError):
        sge(tmp_path, runner, retry=None).cancel(handles)


def test_the_largest_host_from_recorded_qhost() -> None:
    node = parse_qhost(recorded("qhost.xml"))
    assert node is not None and node.cpus == 2
    assert node.memory == round(23.5 * GIB)
