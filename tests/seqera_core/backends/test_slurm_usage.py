"""Slurm accounting as a source of usage: the sacct parser and the bounded wait for records.

The files under ``data/`` are real output of ``sacct -n -P -o JobID,State,ExitCode,Elapsed,
MaxRSS -j ...`` (slurm-wlm 22.05, Debian 12) from a one-node cluster with slurmdbd and
MariaDB started by ``tests/integration/slurm/slurm-up.sh`` with ``WITH_DBD=1``:

- ``sacct_usage_early.txt``: taken the moment ``squeue`` showed job 4 COMPLETED; job 8
  (an ``srun`` step, then a second allocation in the batch step) was still RUNNING.
- ``sacct_usage_late.txt``: the same jobs 12 s later: 4 used ~150 MiB of 400M, 5 was
  killed over its 100M (OverMemoryKill), 6 exited 3, 7 was cancelled while pending.
- ``sacct_usage_pending.txt``: the lines a ``sacct`` printed ~0.1 s after ``squeue`` showed
  job 2 COMPLETED: slurmdbd had the batch step's final record but not yet the job's.
- ``sacct_usage_backend.txt``: the four sacct calls SlurmBackend made for four jobs (12 ran
  ``true``: its step ended before the gatherer's first sample, so no MaxRSS).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.backends._slurm_usage import (
    JobUsage,
    parse_elapsed,
    parse_maxrss,
    parse_usage,
)
from seqera_core.backends.base import JobHandle, JobState
from seqera_core.errors import ResourceError

from .test_slurm import ACCOUNTING_DISABLED, FakeSlurm, backend, fail, ok

DATA = Path(__file__).parent / "data"
EARLY = (DATA / "sacct_usage_early.txt").read_text()
LATE = (DATA / "sacct_usage_late.txt").read_text()
PENDING = (DATA / "sacct_usage_pending.txt").read_text()
KIB = 1024


def test_real_records_give_the_largest_step_peak_and_the_allocation_elapsed() -> None:
    usage = parse_usage(LATE)
    assert usage["4"] == JobUsage("4", 2.0, 168552 * KIB, True)
    # killed over memory: the batch step reads "CANCELLED by 0", still final
    assert usage["5"] == JobUsage("5", 1.0, 322216 * KIB, True)
    assert usage["6"] == JobUsage("6", 1.0, 3168 * KIB, True)
    assert usage["7"] == JobUsage("7", 0.0, None, True)  # cancelled before it started
    assert usage["8"] == JobUsage("8", 4.0, 199352 * KIB, True)  # .batch beats .0


def test_records_not_final_yet_are_not_settled() -> None:
    early = parse_usage(EARLY)
    assert not early["8"].settled and early["8"].peak_memory is None
    assert early["4"].settled
    pending = parse_usage(PENDING)
    assert not pending["2"].settled and pending["2"].peak_memory == 219832 * KIB


def test_a_step_without_a_sample_has_no_peak_but_is_settled() -> None:
    usage = parse_usage((DATA / "sacct_usage_backend.txt").read_text())
    assert usage["12"] == JobUsage("12", 0.0, None, True)
    assert usage["9"] == JobUsage("9", 3.0, 215148 * KIB, True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("123456K", 123456 * KIB), ("1.5G", 3 * 2**29), ("2048", 2048), ("7M", 7 * 2**20),
     ("2T", 2 * 2**40), ("", None), ("  ", None), ("0", 0)],
)  # fmt: skip
def test_maxrss(text: str, expected: int | None) -> None:
    assert parse_maxrss(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("00:00:07", 7), ("1-00:00:00", 86400), ("12:34", 754), ("10-01:02:03", 867723),
     ("03:04.5", 184.5), ("", None)],
)  # fmt: skip
def test_elapsed(text: str, expected: float | None) -> None:
    assert parse_elapsed(text) == expected


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("41|COMPLETED|0:0|00:00:07", "sacct line"),
        ("41.batch|COMPLETED|0:0|00:00:07|lots", "MaxRSS"),
        ("41|COMPLETED|0:0|7 minutes|", "Elapsed"),
    ],
)
def test_bad_lines_name_the_field(line: str, field: str) -> None:
    with pytest.raises(ResourceError, match=field):
        parse_usage(line)


def ids_of(argv: list[str]) -> str:
    return argv[argv.index("-j") + 1]


def test_a_job_waits_for_its_record_then_gets_its_usage(tmp_path: Path) -> None:
    runner = FakeSlurm({"squeue": [ok("8|COMPLETED|None|0|\n")], "sacct": [ok(EARLY), ok(LATE)]})
    slurm = backend(tmp_path, runner)
    handle = JobHandle("slurm", "8")
    [first] = slurm.poll([handle])
    assert first.state is JobState.RUNNING and "accounting" in (first.reason or "")
    [second] = slurm.poll([handle])
    assert second.state is JobState.SUCCEEDED and second.exit_code == 0
    assert (second.wall_seconds, second.peak_memory_bytes) == (4.0, 199352 * KIB)
    assert slurm.history == "sacct"
    assert slurm.poll([handle]) == [second]  # cached: nothing asked again
    assert slurm.calls == {"squeue": 2, "sacct": 2}
    assert "-X" not in runner.argvs[1]  # the steps carry MaxRSS


def test_the_wait_is_bounded(tmp_path: Path) -> None:
    runner = FakeSlurm({"squeue": [ok("8|COMPLETED|None|0|\n")], "sacct": [ok(EARLY)]})
    slurm = backend(tmp_path, runner, usage_lookups=3)
    handle = JobHandle("slurm", "8")
    states = [slurm.poll([handle])[0] for _ in range(4)]
    assert [s.state for s in states] == [JobState.RUNNING] * 2 + [JobState.SUCCEEDED] * 2
    assert states[-1].peak_memory_bytes is None and states[-1].wall_seconds is None
    assert slurm.calls == {"squeue": 3, "sacct": 3}


def test_slurmdbd_down_counts_as_a_lookup(tmp_path: Path) -> None:
    down = fail("sacct: error: slurmdbd: Connection refused")
    runner = FakeSlurm({"squeue": [ok("4|COMPLETED|None|0|\n")], "sacct": [down, ok(LATE)]})
    slurm = backend(tmp_path, runner, usage_lookups=2)
    handle = JobHandle("slurm", "4")
    assert slurm.poll([handle])[0].state is JobState.RUNNING
    [done] = slurm.poll([handle])
    assert done.peak_memory_bytes == 168552 * KIB and slurm.history == "sacct"


def test_one_sacct_answers_forgotten_and_ended_jobs(tmp_path: Path) -> None:
    # 4 is still listed as COMPLETED; 5 and 7 have left squeue: one call for all three.
    runner = FakeSlurm({"squeue": [ok("4|COMPLETED|None|0|\n8|RUNNING|None|0|\n")],
                        "sacct": [ok(LATE)]})  # fmt: skip
    slurm = backend(tmp_path, runner)
    handles = [JobHandle("slurm", i) for i in ("4", "5", "7", "8")]
    four, five, seven, eight = slurm.poll(handles)
    assert ids_of(runner.argvs[1]) == "5,7,4"
    assert four.peak_memory_bytes == 168552 * KIB
    assert (five.state, five.exit_code, five.peak_memory_bytes) == (
        JobState.FAILED, 137, 322216 * KIB)  # fmt: skip
    assert seven.state is JobState.CANCELLED and seven.peak_memory_bytes is None
    assert eight.state is JobState.RUNNING and eight.reason is None
    assert slurm.calls == {"squeue": 1, "sacct": 1}


def test_without_accounting_one_probe_then_nothing(tmp_path: Path) -> None:
    runner = FakeSlurm({"squeue": [ok("1|COMPLETED|None|0|\n2|RUNNING|None|0|\n"),
                                   ok("2|COMPLETED|None|0|\n")],
                        "sacct": [fail(ACCOUNTING_DISABLED)]})  # fmt: skip
    slurm = backend(tmp_path, runner)
    handles = [JobHandle("slurm", "1"), JobHandle("slurm", "2")]
    first = slurm.poll(handles)
    assert first[0].state is JobState.SUCCEEDED and first[0].peak_memory_bytes is None
    assert slurm.poll(handles)[1].state is JobState.SUCCEEDED
    assert slurm.calls == {"squeue": 2, "sacct": 1}


@pytest.mark.parametrize("history", ["jobcomp", "none"])
def test_a_known_history_without_accounting_makes_no_call(tmp_path: Path, history: str) -> None:
    runner = FakeSlurm({"squeue": [ok("1|COMPLETED|None|0|\n")]})
    slurm = backend(tmp_path, runner, history=history)
    assert slurm.poll([JobHandle("slurm", "1")])[0].state is JobState.SUCCEEDED
    assert slurm.calls == {"squeue": 1}


def test_usage_lookups_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="usage_lookups"):
        backend(tmp_path, FakeSlurm({}), usage_lookups=0)
