"""The Slurm site settings on the argv (``_slurm_site``), with recorded replies: the parts
a one-node test cluster cannot show (a job-name prefix, a run inside a Slurm job, a
MinJobAge too short with no history, TmpDisk declared); the rest run on the real
cluster in tests/integration/test_slurm_dropin.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.backends import JobSpec
from seqera_core.errors import ResourceError
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .test_slurm import FakeSlurm, backend, fail, ok

DISK = ResourceRequest(cpus=1, disk=500 * MIB, queue="big")


def test_prefix_settings_and_tmp_where_a_node_declares_it(tmp_path: Path) -> None:
    notes: list[str] = []
    runner = FakeSlurm({"sbatch": [ok("7\n")], "sinfo": [ok("big|0\nbig|1024\nsmall*|0\n")]})
    slurm = backend(tmp_path, runner, warn=notes.append, jobname_prefix="proj", qos="fast",
                    requeue=True, signal="B:USR2@30")  # fmt: skip
    slurm.submit([JobSpec("a", ["true"], DISK)])
    sinfo, argv = runner.argvs
    assert sinfo[0] == "sinfo" and argv[0] == "sbatch"
    assert "--job-name=proj_a" in argv and "--tmp=500M" in argv  # a node of big has 1 GiB
    assert {"--qos=fast", "--requeue", "--signal=B:USR2@30"} <= set(argv)
    with pytest.raises(ResourceError, match="jobname_prefix"):
        backend(tmp_path, runner, jobname_prefix="no spaces")


def test_tmp_never_reaches_a_partition_without_tmpdisk_and_says_so_once(tmp_path: Path) -> None:
    notes: list[str] = []
    runner = FakeSlurm({"sbatch": [ok("7\n"), ok("8\n")], "sinfo": [ok("big|100\n")]})
    slurm = backend(tmp_path, runner, warn=notes.append)
    slurm.submit([JobSpec("a", ["true"], DISK), JobSpec("b", ["true"], DISK)])
    assert not any(a.startswith("--tmp") for argv in runner.argvs for a in argv)
    assert len(notes) == 1 and "partition big declares 500 MiB" in notes[0]
    assert len(runner.lookups) == 1  # one sinfo per partition per run (sacctmgr aside)
    never = FakeSlurm({"sbatch": [ok("9\n")]})
    backend(tmp_path / "n", never, tmp="never").submit([JobSpec("c", ["true"], DISK)])
    assert not any(a.startswith("--tmp") for a in never.argvs[0])


def test_inside_a_slurm_job_the_outer_jobs_variables_stay_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "99")
    monkeypatch.setenv("SLURM_MEM_PER_CPU", "100")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/slurm.conf")
    seen: list[dict[str, str]] = []
    replies = FakeSlurm({"sbatch": [ok("7\n")]})

    def runner(argv, timeout, cwd, env):  # type: ignore[no-untyped-def]
        seen.append(dict(env or {}))
        return replies(argv, timeout, cwd, env)

    notes: list[str] = []
    slurm = backend(tmp_path, replies, warn=notes.append)
    slurm._runner = runner  # the same replies, with the environment each command got
    slurm.submit([JobSpec("a", ["true"], ResourceRequest(cpus=1))])
    assert seen and "SLURM_MEM_PER_CPU" not in seen[-1] and seen[-1]["SLURM_CONF"]
    assert any("inside Slurm job 99" in n for n in notes)


def test_a_short_min_job_age_without_history_is_said(tmp_path: Path) -> None:
    notes: list[str] = []
    runner = FakeSlurm({
        "squeue": [ok("")],
        "sacct": [fail("Slurm accounting storage is disabled")],
        "sacct -c": [fail("sacct: error: no jobcomp")],
        "scontrol": [ok("MinJobAge               = 2 sec\n")],
    })  # fmt: skip
    slurm = backend(tmp_path, runner, warn=notes.append)
    slurm._finished_lookup(["1"])
    assert any("MinJobAge is 2 s" in n for n in notes), notes
