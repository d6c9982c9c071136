"""``seqera run --backend lsf`` against fake ``bsub``/``bjobs`` programs replaying recordings.

A parsing and argv test only: the programs print shared/fixtures/lsf's recordings (the
Brutus ``bsub`` output; DKFZ's finished job with its JOBID set to the one ``bsub``
printed), so no job runs. It shows the whole path (session, registry, commands run as
processes, one bjobs per poll) reads them as LSF would have meant them.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from seqera_core.cli import main

FIXTURES = Path(__file__).parents[3] / "shared" / "fixtures" / "lsf"


def test_run_reads_the_recorded_finished_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    args = tmp_path / "bsub.args"
    done = shlex.quote(str(FIXTURES / "bjobs-done-dkfz.json"))
    programs = {
        "bsub": f'printf "%s\\n" "$*" >> {shlex.quote(str(args))}\n'
        f"cat {shlex.quote(str(FIXTURES / 'bsub-brutus.txt'))}\n",
        "bjobs": f'sed \'s/"22005"/"473713"/\' {done}\n',
    }
    for name, body in programs.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LSF_ENVDIR", str(tmp_path))  # no lsf.conf: KB
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--backend", "lsf", "--cpus", "2", "--memory", "1GB", "--time", "5m", "--",
            "true"]  # fmt: skip
    assert main(argv) == 0
    [line] = args.read_text().splitlines()
    # 10^9 bytes = 976562.5 KB, rounded up
    assert "-n 2 -R span[hosts=1] -R rusage[mem=976563] -M 976563 -W 5 -cwd " in line
