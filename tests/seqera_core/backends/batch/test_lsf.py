"""The LSF backend: parsing on recorded real outputs, argv, and the life cycle over them.

No LSF can run here. The outputs are in shared/fixtures/lsf (its README names where each
was recorded). The life-cycle tests answer ``bsub``/``bjobs``/``bkill`` from those
recordings through the backend's ``runner``: they test argv and parsing, not LSF.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seqera_core.backends.base import OUT_OF_MEMORY, TIME_LIMIT, JobSpec, JobState
from seqera_core.backends.batch._base import SchedulerError
from seqera_core.backends.batch.lsf import (
    LsfBackend,
    lsf_exit,
    parse_bjobs,
    parse_submit,
    submission_keys,
)
from seqera_core.dialects.snakemake import request_from_resources
from seqera_core.errors import UsageError
from seqera_core.labels import decode_labels
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import GIB, MIB

from .replies import Replies, result

FIXTURES = Path(__file__).parents[4] / "shared" / "fixtures" / "lsf"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def lsf(tmp_path: Path, runner: Replies, **options: object) -> LsfBackend:
    # an empty LSF_ENVDIR: no lsf.conf, so IBM's defaults (KB, per-process -M) apply
    env = {"LSF_ENVDIR": str(tmp_path / "no-lsf")}
    return LsfBackend(work_dir=tmp_path / "jobs", runner=runner, sleep=lambda _: None,
                      env=env, **options)  # type: ignore[arg-type]  # fmt: skip


def report_exit(name: str) -> tuple[str, str]:
    """The termination line and exit code of a recorded LSF job report."""
    text = fixture(name)
    reason = next(line for line in text.splitlines() if line.startswith("TERM_"))
    code = re.search(r"Exited with exit code (\d+)\.", text)
    assert code is not None
    return reason, code[1]


def test_submit_output_recorded_on_brutus() -> None:
    assert parse_submit(fixture("bsub-brutus.txt")) == "473713"
    with pytest.raises(SchedulerError, match="no job id"):
        parse_submit("Request aborted by esub. Job not submitted.\n")


def test_finished_job_recorded_at_dkfz() -> None:
    [(job_id, (seen, usage))] = parse_bjobs(fixture("bjobs-done-dkfz.json")).items()
    assert job_id == "22005"
    assert (seen.state, seen.exit_code, seen.node) == (JobState.SUCCEEDED, 0, "tbi-cn019")
    wall, peak, cpu = usage
    assert (wall, cpu) == (1.0, 1.0)  # "00:00:01" (-hms)
    assert peak == int(5.2 * GIB)  # "5.2 Gbytes"


def test_listing_recorded_at_dkfz() -> None:
    listed = parse_bjobs(fixture("bjobs-list-dkfz.json"))
    states = {i: s.state for i, (s, _) in listed.items()}
    assert states == {"487641": JobState.FAILED, "487642": JobState.FAILED,
                      "488155": JobState.FAILED, "491861": JobState.SUCCEEDED,
                      "491864": JobState.SUCCEEDED, "491867": JobState.SUCCEEDED}  # fmt: skip
    # EXIT without an exit code: unknown until the job's own exit file says
    assert listed["487641"][0].exit_code is None
    assert submission_keys(fixture("bjobs-list-dkfz.json")) == {}  # none of ours


def test_cancelled_and_pending_recorded_at_mskcc() -> None:
    owner = json.loads(fixture("bjobs-exit-owner-mskcc.json"))["RECORDS"][0]
    seen = lsf_exit(owner["STAT"], owner["EXIT_CODE"], owner["EXIT_REASON"])
    assert seen.state is JobState.CANCELLED
    assert seen.reason == "cancelled (TERM_OWNER: job killed by owner)"
    pending = fixture("bjobs-pend-mskcc.json").replace('"USER"', '"JOBID":"7",\n"USER"')
    [(seen, _)] = parse_bjobs(pending).values()
    assert (seen.state, seen.reason) == (JobState.PENDING, "New job is waiting for scheduling")


def test_memory_and_run_limit_kills_recorded_at_dtu() -> None:
    reason, code = report_exit("report-term-memlimit-dtu.txt")
    seen = lsf_exit("EXIT", code, reason)
    assert (seen.state, seen.exit_code, seen.out_of_memory) == (JobState.FAILED, 137, True)
    assert seen.final_cause == OUT_OF_MEMORY and seen.reason == "out of memory"
    reason, code = report_exit("report-term-runlimit-dtu.txt")
    seen = lsf_exit("EXIT", code, reason)
    assert (seen.exit_code, seen.time_limit, seen.out_of_memory) == (140, True, False)
    assert seen.final_cause == TIME_LIMIT


@pytest.mark.parametrize(
    ("reason", "state", "cause"),
    [("TERM_PREEMPT: job killed after preemption", JobState.FAILED, "preempted"),
     ("TERM_ZOMBIE: job exited while LSF is not available", JobState.FAILED, "node_failure"),
     ("TERM_ADMIN: job killed by root or LSF administrator", JobState.CANCELLED, "cancelled")],
)  # fmt: skip
def test_termination_reasons_by_ibm_docs(reason: str, state: JobState, cause: str) -> None:
    # the reasons' texts as IBM LSF 10.1 "Termination reasons" lists them
    seen = lsf_exit("EXIT", "", reason)
    assert (seen.state, seen.final_cause) == (state, cause)


REQUEST = ResourceRequest(
    cpus=3,
    memory=3 * GIB + 1,
    time=5401,
    accelerator=Accelerator(1, "TeslaV100"),
    queue="normal",
    extra={"lsf.project": "p1", "lsf.group": "g1"},
)


def test_bsub_argv(tmp_path: Path) -> None:
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))]})
    spec = JobSpec("3 bad[name]", ["true"], REQUEST, labels={"team": "a b"})
    [handle] = lsf(tmp_path, runner).submit([spec])
    argv = runner.argvs[0]
    assert argv[:3] == ["bsub", "-J", "j3_bad_name_"]
    key, labels = argv[argv.index("-Jd") + 1].split(" ")
    assert key.startswith("seqera-") and decode_labels(labels) == {"team": "a b"}
    joined = " ".join(argv)
    # KB by default, rounded up; rusage per host (one host: span[hosts=1])
    kb = 3 * 1024 * 1024 + 1
    assert f"-n 3 -R span[hosts=1] -R rusage[mem={kb}] -M {kb} -W 91" in joined
    assert "-gpu num=1:gmodel=TeslaV100 -q normal -G g1 -P p1" in joined
    directory = Path(argv[-1]).parent
    assert argv[argv.index("-cwd") + 1] == str(directory)
    assert argv[argv.index("-o") + 1] == str(directory / "stdout")
    assert argv[-2:] == ["/bin/sh", str(directory / "job.sh")]
    assert handle.native_id == "473713" and handle.backend == "lsf"


def test_units_from_lsf_conf_and_settings(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "lsf.conf").write_text('# site\nLSF_UNIT_FOR_LIMITS=MB\nLSB_JOB_MEMLIMIT="y"\n')
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))]})
    backend = LsfBackend(work_dir=tmp_path / "jobs", runner=runner, env={"LSF_ENVDIR": str(conf)},
                         reserve_per_task=True)  # fmt: skip
    assert (backend.settings.unit, backend.settings.job_memlimit) == ("MB", True)
    backend.submit([JobSpec("a", ["true"], ResourceRequest(cpus=2, memory=1000 * MIB + 1))])
    joined = " ".join(runner.argvs[0])
    assert "-R rusage[mem=501] -M 1001" in joined  # per task: 1001 MB over 2, rounded up
    gb = LsfBackend(work_dir=tmp_path / "jobs", env={"LSF_ENVDIR": str(conf)}, unit="gb")
    assert gb.settings.unit == "GB"  # the backend's setting wins over lsf.conf


def test_bad_unit_names_the_field(tmp_path: Path) -> None:
    from seqera_core.errors import ResourceError

    with pytest.raises(ResourceError, match=r"lsf\.unit.*KB, MB"):
        LsfBackend(work_dir=tmp_path, unit="MiB")


def test_life_cycle_over_recordings(tmp_path: Path) -> None:
    """bsub answered by the Brutus recording, bjobs by DKFZ's finished job with its JOBID set
    to the one bsub printed (the only change): argv and parsing, not LSF."""
    done = fixture("bjobs-done-dkfz.json").replace('"22005"', '"473713"')
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))], "bjobs": [result(done)],
                      "bkill": [result(stderr="Job <473713>: Job has already finished\n",
                                       code=255)]})  # fmt: skip
    backend = lsf(tmp_path, runner)
    [handle] = backend.submit([JobSpec("a", ["true"], ResourceRequest(cpus=1))])
    [status] = backend.poll([handle])
    assert runner.argvs[1][:4] == ["bjobs", "-a", "-json", "-o"]
    assert runner.argvs[1][-1] == "473713"
    assert (status.state, status.exit_code) == (JobState.SUCCEEDED, 0)
    assert status.peak_memory_bytes == int(5.2 * GIB) and status.wall_seconds == 1.0
    backend.cancel([handle])  # finished: nothing to cancel, no command
    assert [a[0] for a in runner.argvs] == ["bsub", "bjobs"]


def test_array_argv_and_elements(tmp_path: Path) -> None:
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))]})
    backend = lsf(tmp_path, runner, squash=SquashPolicy("array"))
    specs = [JobSpec("sample", ["echo", str(i)], ResourceRequest(cpus=1)) for i in range(3)]
    handles = backend.submit(specs)
    argv = runner.argvs[0]
    assert argv[argv.index("-J") + 1] == "sample[1-3]"
    assert argv[argv.index("-o") + 1].endswith("/%I.out")
    assert [h.native_id for h in handles] == ["473713[1]", "473713[2]", "473713[3]"]
    array = Path(argv[-1]).parent
    assert (array / "1.dir").resolve() == Path(handles[0].stdout or "").parent.resolve()


def test_find_asks_once_and_finds_nothing_unlisted(tmp_path: Path) -> None:
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))],
                      "bjobs": [result(fixture("bjobs-list-dkfz.json"))]})  # fmt: skip
    backend = lsf(tmp_path, runner)
    backend.submit([JobSpec("a", ["true"], key="row-1")])
    fresh = lsf(tmp_path, runner)  # a later process: only the work directory
    assert fresh.find(["row-1", "never-sent"]) == {}
    assert runner.argvs[-1] == ["bjobs", "-a", "-json", "-o", "jobid job_description"]


def test_a_snakemake_rule_with_the_lsf_plugins_names(tmp_path: Path) -> None:
    """What snakemake-executor-plugin-lsf's users write reaches bsub as that plugin sends it."""
    resources = {"mem_mb_per_cpu": 1000, "lsf_queue": "long", "lsf_project": "genomics",
                 "lsf_extra": "-R 'select[a100]' -u me@example.org", "time_min": 30,
                 "mpi": "mpirun", "tasks": 4, "ptile": 2}  # fmt: skip
    translation = request_from_resources(resources, threads=4, rule="calc_pi")
    assert translation.ignored == ()
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))]})
    [handle] = lsf(tmp_path, runner).submit([JobSpec("calc_pi", ["true"], translation.request)])
    argv = runner.argvs[0]
    at = argv.index("-n")
    kb = -(-4 * 1000 * 10**6 // 1024)  # 4 x 1000 MB per CPU, in KB (the default unit)
    assert argv[at : at + 10] == ["-n", "4", "-R", "span[ptile=2]", "-R", f"rusage[mem={kb}]",
                                  "-M", str(kb), "-W", "30"]  # fmt: skip
    at = argv.index("-q")
    assert argv[at : at + 8] == ["-q", "long", "-P", "genomics", "-R", "select[a100]",
                                 "-u", "me@example.org"]  # fmt: skip
    assert handle.native_id == "473713"


def test_lsf_extra_cannot_move_the_outputs(tmp_path: Path) -> None:
    runner = Replies({"bsub": [result(fixture("bsub-brutus.txt"))]})
    bad = ResourceRequest(cpus=1, extra={"lsf.extra": "-oo /elsewhere"})
    with pytest.raises(UsageError, match="lsf_extra"):
        lsf(tmp_path, runner).submit([JobSpec("x", ["true"], bad)])
    assert runner.argvs == []  # nothing sent
