"""``seqera run`` killed (``kill -9``) while its job runs, then the same command again:
the job the dead run left is adopted (waited for if it still runs, its output streamed,
its exit code returned), not started a second time; a job whose end a run saw runs
again when asked. (A job of a dead run that failed is sent again, by design: see
``seqera_core.resume``.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

SEQERA = Path(sys.executable).parent / "seqera"
# Counts its starts, waits for its gate, says so.
JOB = "echo start >> starts; while [ ! -e gate ]; do sleep 0.05; done; echo through"


def test_a_job_left_by_a_killed_run_is_adopted_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # where runs keep their ledgers
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # each run's log directory
    (tmp_path / "tmp").mkdir()
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_HISTORY", "SEQERA_RESOLVER_URL"):
        monkeypatch.delenv(name, raising=False)
    argv = [str(SEQERA), "run", "--workdir", str(tmp_path), "--", "sh", "-c", JOB]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (tmp_path / "starts").exists():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)  # it finds the job running (or, on a slow machine, ended), and waits
    (tmp_path / "gate").touch()
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert out == "through\n"  # the adopted job's output, streamed from its log
    assert (tmp_path / "starts").read_text() == "start\n"  # started once
    # This run saw the job end: asked again, it runs again; nothing is left behind.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "starts").read_text() == "start\nstart\n"
    assert not (tmp_path / "home" / ".seqera" / "run").exists() or not os.listdir(
        tmp_path / "home" / ".seqera" / "run"
    )
    assert os.listdir(tmp_path / "tmp") == []  # the killed run's log directory too
