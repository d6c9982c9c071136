"""The trace replay: the issue's protocol on a real nf-core/iwd trace (trimmed, in the repo)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from seqera_core.errors import UsageError
from seqera_core.history import History, TaskRecord, open_history
from seqera_core.models import ResourceRequest, ResourceResponse
from seqera_core.resolvers import PredictiveResolver
from seqera_sidecar.cli import main
from seqera_sidecar.evaluate import MIN_RUNS, Sample, Score, evaluate, evaluate_time, split
from seqera_sidecar.lopo import _choose, _Settings, leave_one_out
from seqera_sidecar.trace import read_trace

TRACE = Path(__file__).parent / "data" / "trace-iwd.csv.gz"


def test_reads_a_raw_trace() -> None:
    records = read_trace(TRACE)
    assert len(records) == 1661
    first = records[0]
    assert first.process == "demToGraph" and first.memory == 524288000
    assert first.peak_memory == 290197504 and first.realtime == pytest.approx(6.094)
    assert first.input_bytes == 30916214


def test_a_formatted_trace_is_refused_with_the_column(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("task_id,process,status,memory,rss,realtime\n1,A,COMPLETED,4 GB,1 GB,1s\n")
    with pytest.raises(UsageError, match=r"'memory' is '4 GB'.*trace\.raw"):
        read_trace(path)


def test_split_is_seeded_and_keeps_30_percent_of_large_processes() -> None:
    records = read_trace(TRACE)
    past, online = split(records, 7)
    assert split(records, 7) == (past, online)
    assert split(records, 8) != (past, online)
    by_process: dict[str, int] = {}
    for record in records:
        by_process[record.process] = by_process.get(record.process, 0) + 1
    kept = sum(n for n in by_process.values() if n >= MIN_RUNS)
    assert len(past) + len(online) == kept
    assert abs(len(past) - 0.3 * kept) <= len(by_process)


def test_a_sample_keeps_a_dozen_runs_of_history_per_process() -> None:
    records = read_trace(TRACE)
    past, online = split(records, 3, Sample(12, 28))
    assert split(records, 3, Sample(12, 28)) == (past, online)
    counts: dict[str, int] = {}
    for record in records:
        counts[record.process] = counts.get(record.process, 0) + 1
    large = {process for process, n in counts.items() if n >= MIN_RUNS}
    assert len(large) == 5 and {r.process for r in past + online} == large
    for process in large:
        assert sum(r.process == process for r in past) == 12
        assert sum(r.process == process for r in online) == 28
    assert not {r.task_id for r in past} & {r.task_id for r in online}
    with pytest.raises(ValueError, match="history"):
        Sample(0, 28)


def test_the_predictor_beats_the_maximum_with_few_retries() -> None:
    records = read_trace(TRACE)
    preset, largest, predictive = (evaluate(records, 0, p) for p in ("preset", "max", "predictive"))
    assert preset.wasted_gbh > largest.wasted_gbh > predictive.wasted_gbh
    assert predictive.maq >= 0.95 and predictive.retry_share <= 0.01
    assert preset.tasks == largest.tasks == predictive.tasks
    assert predictive.flagged == ()


def test_a_replay_never_flags_a_process() -> None:
    # nf-core/eager's MarkDuplicates was retried at 2x and 3x its 17.2 GB and used 32-45
    # GB (a JVM sized from task.memory). Recorded here as first attempts at 17.2 GB, those
    # runs are outliers the replay retries at allocations it chooses, against peaks that
    # cannot follow them: issue 31's pipeline C, where one such retry flagged a process.
    full = read_trace(Path(__file__).parent / "data" / "trace-eager.csv.gz")
    records = [attrs.evolve(r, attempt=1, memory=17_179_869_184 if r.attempt > 1 else r.memory)
               for r in full]  # fmt: skip
    runs = ((0, None), (4, Sample(12, 28)), (5, Sample(12, 28)))
    scores = [evaluate(records, seed, "predictive", sample) for seed, sample in runs]
    assert sum(s.retries for s in scores) > 0 and all(s.flagged == () for s in scores)
    # nor the trace as it is: its retries at 2x and 3x were killed first (chosen for
    # needing more), so they are no evidence that the peaks follow the allocation
    assert evaluate(full, 4, "predictive", Sample(12, 28)).flagged == ()


def test_the_replay_records_its_own_allocation_as_the_tasks_memory() -> None:
    class Recording(PredictiveResolver):
        def __init__(self, history: History) -> None:
            self.answers: list[int] = []
            self.online: list[int | None] = []
            self.built = False
            super().__init__(history)
            self.built = True

        def _learn(self, seq: int, record: TaskRecord) -> None:
            if self.built:
                self.online.append(record.memory)
            super()._learn(seq, record)

        def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
            answer = super().resolve(request)
            assert answer is not None
            self.answers.append(answer.memory)
            return answer

    made: list[Recording] = []
    evaluate(read_trace(TRACE), 0, lambda h: made.append(Recording(h)) or made[-1],
             Sample(12, 28))  # fmt: skip
    # each attempt is recorded (and learned at the next resolve) with what it was given
    assert len(made[0].answers) > 140 and made[0].online == made[0].answers[:-1]


def test_time_limits_are_shorter_and_no_task_is_killed_twice() -> None:
    # The trace declares no time limits: give every task nf-core's usual 4 hours.
    records = [attrs.evolve(r, time=4 * 3600) for r in read_trace(TRACE)]
    preset, predictive = (evaluate_time(records, 0, p) for p in ("preset", "predictive"))
    assert preset.kills == 0 and preset.limit_hours == preset.declared_hours
    assert predictive.limit_hours < preset.declared_hours / 10
    assert predictive.kill_share <= 0.01 and predictive.killed_twice == 0
    assert predictive.run_hours == pytest.approx(
        sum(r.realtime or 0 for r in split(records, 0)[1]) / 3600
    )


def test_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seqera_sidecar", "evaluate", str(TRACE), "--seed", "1",
         "--predictor", "max", "--predictor", "predictive"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| max") or
            line.startswith("| predictive")]  # fmt: skip
    assert len(rows) == 4  # memory, then time limits


def test_cpu_report_from_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = open_history(tmp_path / "h.db")
    history.record(read_trace(TRACE))
    history.close()
    assert main(["cpus", "--history", str(tmp_path / "h.db")]) == 0
    out = capsys.readouterr().out
    wasted = [u for u in open_history(tmp_path / "h.db").cpu_use() if u.unused > 0]
    assert wasted and all(f"| {u.process} |" in out for u in wasted)
    assert "--apply-cpus" in out


# 4 of nf-core/eager's processes, MarkDuplicates among them
EAGER = Path(__file__).parent / "data" / "trace-eager-slice.csv.gz"


def test_leave_one_pipeline_out_scores_each_trace_with_settings_chosen_on_the_other() -> None:
    traces = {"iwd": read_trace(TRACE), "eager": read_trace(EAGER)}
    grid = ({"retry_cost": 10.0, "alpha": 0.05}, {"retry_cost": 30.0, "alpha": 0.02})
    held = leave_one_out(traces, [0], grid=grid)
    assert [(h.trace, h.seed) for h in held] == [("eager", 0), ("iwd", 0)]
    builds = {_Settings(g).name: _Settings(g) for g in grid}
    iwd = held[1]
    assert iwd.score == evaluate(traces["iwd"], 0, builds[iwd.chosen])
    assert iwd.maximum == evaluate(traces["iwd"], 0, "max")
    assert iwd.score.wasted_gbh < iwd.maximum.wasted_gbh and iwd.score.retry_share <= 0.01
    # eager's MarkDuplicates (retried at 2x and 3x in the trace) is sized from its input,
    # not flagged: the replay's allocations are the model's, whose peaks cannot follow them
    assert held[0].score.wasted_gbh < held[0].maximum.wasted_gbh * 0.6
    assert all(h.score.flagged == () for h in held)
    assert all(h.time.killed_twice == 0 for h in held)


def test_the_choice_puts_the_goals_first_then_the_least_waste() -> None:
    def score(wasted: float, retries: int) -> Score:
        return Score("x", 100, 50.0, wasted, retries)

    maxima = {("a", 0): score(10.0, 1), ("b", 0): score(10.0, 1)}
    scores = {
        (0, "a", 0): score(2.0, 5), (0, "b", 0): score(2.0, 0),  # least waste, 5 % retries
        (1, "a", 0): score(6.0, 1), (1, "b", 0): score(6.0, 1),
        (2, "a", 0): score(4.0, 1), (2, "b", 0): score(5.0, 0),
    }  # fmt: skip
    assert _choose(scores, maxima, ["a", "b"], [0], 3) == 2
    assert _choose(scores, maxima, ["b"], [0], 3) == 0


def test_the_command_with_several_traces(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "seqera_sidecar", "evaluate", str(TRACE), str(EAGER),
         "--seed", "0", "--seed", "1", "--predictor", "max"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.endswith(")")] == [
        f"trace-{name} (seed {seed})" for name in ("iwd", "eager-slice") for seed in (0, 1)
    ]
    alone = subprocess.run(
        [sys.executable, "-m", "seqera_sidecar", "evaluate", str(TRACE), "--leave-one-out"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert alone.returncode == 2 and "--leave-one-out needs two traces" in alone.stderr


def test_a_bad_sample_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("12", "0,28", "a,b"):
        with pytest.raises(SystemExit) as exited:
            main(["evaluate", str(TRACE), "--sample", bad])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert f"--sample: {bad!r}" in err and ("HISTORY,ONLINE" in err or ">= 1" in err)
