"""Squashed allocations killed at random moments on the real one-node Slurm: every job
runs to the end exactly once, and none is lost.

Three faults, mixed at random over one run of ``JOBS`` jobs (seed: ``$SEQERA_FAULT_SEED``,
else a fresh one, printed with the result):

- ``scancel`` of a running allocation, as a user or an admin would;
- ``kill -9`` of its launcher (its jobs die with it: their guards get ``PR_SET_PDEATHSIG``);
- a launcher that kills itself (SIGKILL) right after a claim, before it writes or starts
  anything: the window in which, when a claim was a rename followed by a record, a job
  was lost for good while a new allocation was submitted at every poll.

What is counted is side effects, not logs: each run of a job leaves ``starts/NAME.PID``
when it begins and ``done/NAME.PID`` when it reaches its end, and ``after-exit/NAME.PID``
if it starts although its script had recorded an exit code (a finished job run again:
never allowed). A run interrupted by a fault leaves a ``starts`` file only and is run
again; none may be lost. A second ``done`` can come only from a run killed in the
milliseconds between its last side effect and the exit code its script records (the
batch job script's ``status=$?; printf ... && mv``): by the protocol that run had not
finished; the row reports how often that happened. The result is printed as one JSON
line, the row of the fault table.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState, RetryPolicy, SquashBackend
from seqera_core.backends.batch.slurm import SlurmBackend
from seqera_core.models import ResourceRequest
from seqera_core.squash import SquashPolicy
from seqera_core.units import MIB

from .conftest import FaultRow, FaultTable, SlurmCluster

pytestmark = pytest.mark.integration

JOBS = 30
KILLS = 8  # scancel and kill -9, on top of the launchers' own crashes after a claim
CLAIM_CRASH = 0.12  # the chance a launcher kills itself right after a claim
LIMIT = 240.0

# The launcher copied next to the jobs, run so that it may SIGKILL itself right after a
# claim (the rename done, nothing else): the file count in claim-crashes/ is the tally.
CRASHING = """
import importlib.util, os, random, signal, sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("launcher", sys.argv[1])
launcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launcher)
tally = Path({tally!r})
start = launcher.Launcher._start

def claimed_then_die(self, entry):
    if random.random() < {chance}:
        (tally / f"{{entry['key']}}.{{os.getpid()}}").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return start(self, entry)

launcher.Launcher._start = claimed_then_die
sys.exit(launcher.main(sys.argv[2:]))
"""


def _job(base: Path, name: str, nap: float) -> JobSpec:
    # It runs in its own job directory: an exit file there means its script had recorded
    # an earlier run's end, so this run is a finished job run again.
    script = (
        f"if [ -e exitcode ]; then touch {base}/after-exit/{name}.$$; fi; "
        f"touch {base}/starts/{name}.$$ && sleep {nap:.2f} && touch {base}/done/{name}.$$"
    )
    request = ResourceRequest(cpus=1, memory=64 * MIB, time=60)
    return JobSpec(name, ["sh", "-c", script], request)


def _started(backend: SquashBackend) -> list[tuple[str, int, str]]:
    """(scheduler job id, launcher pid, name) of every live allocation whose launcher runs."""
    found = []
    for group in backend._groups.values():
        for allocation in group.live():
            try:
                started = json.loads((allocation.directory / "started").read_text())
            except (OSError, ValueError):
                continue
            if allocation.handle is not None:
                found.append((allocation.handle.native_id, int(started["pid"]), allocation.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_allocations_killed_at_random_run_every_job_exactly_once(
    slurm: SlurmCluster, tmp_path: Path, fault_table: FaultTable
) -> None:
    seed = int(os.environ.get("SEQERA_FAULT_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    for sub in ("starts", "done", "after-exit", "claim-crashes"):
        (tmp_path / sub).mkdir()
    wrapper = tmp_path / "python"
    crashing = tmp_path / "crashing.py"
    crashing.write_text(CRASHING.format(tally=str(tmp_path / "claim-crashes"), chance=CLAIM_CRASH))
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {crashing} "$@"\n')
    wrapper.chmod(0o755)
    inner = SlurmBackend(work_dir=tmp_path / "jobs", retry=RetryPolicy(attempts=10))
    policy = SquashPolicy("squash", max_jobs=8, max_time=3600, cpus=2)
    backend = SquashBackend(
        inner, policy, idle=3, python=str(wrapper), max_losses=100, scheduler_every=1
    )
    specs = [_job(tmp_path, f"j{n:02d}", rng.uniform(0.3, 2.0)) for n in range(JOBS)]
    handles = backend.submit(specs)
    injected: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + LIMIT
    next_fault = time.monotonic() + rng.uniform(1.0, 3.0)
    while True:
        statuses = backend.poll(handles)
        if all(s.state.finished for s in statuses):
            break
        assert time.monotonic() < deadline, f"seed {seed}: not finished: {statuses}"
        if sum(injected.values()) < KILLS and time.monotonic() >= next_fault:
            running = [a for a in _started(backend) if _alive(a[1])]
            if running:
                job_id, pid, _ = rng.choice(running)
                if rng.random() < 0.5:
                    subprocess.run(["scancel", job_id], check=True)
                    injected["scancel"] += 1
                else:
                    os.kill(pid, signal.SIGKILL)
                    injected["kill -9 launcher"] += 1
            next_fault = time.monotonic() + rng.uniform(0.5, 3.0)
        time.sleep(0.2)
    backend.close()
    injected["launcher SIGKILL right after a claim"] = len(
        list((tmp_path / "claim-crashes").iterdir())
    )
    done = collections.Counter(p.name.split(".")[0] for p in (tmp_path / "done").iterdir())
    starts = collections.Counter(p.name.split(".")[0] for p in (tmp_path / "starts").iterdir())
    names = [s.name for s in specs]
    twice = sum(1 for n in names if done[n] > 1)
    ran = sum(1 for n in names if done[n] >= 1)
    lost = sum(1 for n in names if done[n] == 0)
    command = f"SEQERA_FAULT_SEED={seed} uvx nox -s faults -- -k squash_kill"
    row = {
        "fault": "squashed allocation killed at random (scancel, kill -9 launcher, "
        "crash right after a claim)",
        "injected": dict(injected),
        "seed": seed,
        "submitted": JOBS,
        "run": ran,
        "lost": lost,
        "run_twice": twice,
        "run_after_its_exit_code": len(list((tmp_path / "after-exit").iterdir())),
        "interrupted_and_rerun": sum(starts[n] - done[n] for n in names),
        "allocations": backend.calls["sbatch"],
        "command": command,
    }
    print(json.dumps(row))
    fault_table.rows.append(
        FaultRow(
            fault="squashed allocation: scancel, kill -9 of its launcher, launcher SIGKILL "
            f"right after a claim (seed {seed})",
            injected=sum(injected.values()),
            jobs=JOBS,
            submitted=JOBS,
            ran=ran,
            lost=lost,
            twice=twice,
            command=command,
        )
    )
    assert all(s.state is JobState.SUCCEEDED for s in statuses), (seed, statuses)
    assert lost == 0, row
    # A finished job (its exit code recorded) never runs again. A run killed after its
    # last side effect and before its script recorded the exit code (a few milliseconds:
    # `status=$?; printf ... && mv`) did not finish, by that definition, and runs again:
    # the only way to a second `done`, bounded by the faults that can land there.
    assert row["run_after_its_exit_code"] == 0, row
    assert twice <= injected["scancel"] + injected["kill -9 launcher"], row
    assert sum(injected.values()) >= 3, row  # the faults did happen
