"""``seqera run``: exit codes, output, units on the command line, limits and Ctrl-C."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqera_core.backends import registry
from seqera_core.cli import main
from seqera_core.cli.run import parse_duration, parse_size
from seqera_core.errors import ResourceError
from seqera_core.history import open_history
from seqera_core.units import GB, GIB, MB, MIB

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

SEQERA = Path(sys.executable).parent / "seqera"


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"  # an unreaped orphan is not running


def test_exit_code_and_output(capfd: pytest.CaptureFixture[str]) -> None:
    status = main(["run", "--", "sh", "-c", "echo out; echo oops >&2; exit 3"])
    out, err = capfd.readouterr()
    assert status == 3
    assert out == "out\n"
    assert "oops\n" in err


def test_success_with_resources_labels_and_workdir(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--cpus", "1", "--memory", "512MB", "--time", "1m", "--disk", "1GiB", "--gpus", "1"]
    script = 'pwd; echo "$SEQERA_LABEL_PROJECT $SEQERA_JOB_NAME"'
    labels = ["--label", "project=rnaseq", "--name", "demo", "--workdir", str(tmp_path)]
    status = main(["run", *argv, *labels, "-v", "--", "sh", "-c", script])
    out, err = capfd.readouterr()
    assert status == 0
    assert out == f"{tmp_path}\nrnaseq demo\n"
    assert "submitted job" in err and "succeeded" in err and "wall" in err
    assert "local backend neither reserves nor isolates accelerators" in err


def test_command_options_belong_to_the_command(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--", "sh", "-c", 'echo "$@"', "x", "--cpus", "-v"]) == 0
    assert capfd.readouterr().out == "--cpus -v\n"


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--memory", "4 gb"),
        ("--memory", "4gb"),
        ("--memory", "4G"),
        ("--memory", "4096"),
        ("--memory", "0GB"),
        ("--disk", "lots"),
        ("--time", "90"),
        ("--time", "1H"),
        ("--time", "30m1h"),
        ("--time", "1:30"),
        ("--time", "0s"),
        ("--cpus", "two"),
        ("--cpus", "0"),
        ("--gpus", "0"),
        ("--gpus", ":2"),
        ("--label", "novalue"),
    ],
)
def test_invalid_values_exit_2_naming_the_flag(
    capfd: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    assert main(["run", flag, value, "--", "true"]) == 2
    err = capfd.readouterr().err
    assert err.startswith(f"seqera run: error: {flag}: {value!r} is not valid")


def test_memory_error_lists_the_accepted_forms(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--memory", "4 gb", "--", "true"]) == 2
    err = capfd.readouterr().err
    assert "4GB" in err and "4GiB" in err and "case-sensitive" in err


def test_a_job_larger_than_the_machine_exits_2(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--cpus", "100000", "--", "true"]) == 2
    assert "cpus: 100000 is not valid; expected at most" in capfd.readouterr().err


def test_missing_command_exits_2(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--cpus", "1"]) == 2
    assert "COMMAND" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4GB", 4 * GB),
        ("4GiB", 4 * GIB),
        ("512MB", 512 * MB),
        ("1.5GiB", 3 * GIB // 2),
        ("4 GiB", 4 * GIB),
        ("1kB", 1000),
        ("0.0001KB", 1),  # rounds up: never less than asked
        ("100B", 100),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1h", 3600),
        ("90m", 5400),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("2d12h", 216000),
        ("45s", 45),
        ("01:30:00", 5400),
        ("100:00:00", 360000),
        ("2-00:00:00", 172800),
    ],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


def test_duration_errors_name_the_flag() -> None:
    with pytest.raises(ResourceError) as error:
        parse_duration("1 hour", "--time")
    assert error.value.field == "--time" and error.value.value == "1 hour"


def test_time_limit_is_reported(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--time", "1s", "--", "sleep", "10"]) == 128 + signal.SIGTERM
    assert "time limit of 1s exceeded" in capfd.readouterr().err


def test_out_of_memory_is_reported(capfd: pytest.CaptureFixture[str]) -> None:
    hog = "import time; b = b'x' * (200 * 2**20); time.sleep(10)"
    status = main(["run", "--memory", f"{100 * MIB}B", "--", sys.executable, "-c", hog])
    assert status == 128 + signal.SIGKILL
    assert "out of memory (requested 100 MiB)" in capfd.readouterr().err


def test_killed_and_missing_commands(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--", "sh", "-c", "kill -9 $$"]) == 137
    assert "killed by SIGKILL" in capfd.readouterr().err
    assert main(["run", "--", "/nonexistent/tool"]) == 127
    assert "/nonexistent/tool" in capfd.readouterr().err


def test_an_unavailable_backend_exits_2(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = registry.BackendEntry("slurm", "seqera_core.backends.not_written_yet", "X")
    monkeypatch.setitem(registry._installed(), "slurm", missing)
    assert main(["run", "--backend", "slurm", "--", "true"]) == 2
    assert "backend 'slurm' is not available" in capfd.readouterr().err


PLATFORM = Path(__file__).parents[3] / "shared" / "platforms" / "slurm-cluster.yaml"


def test_platform_rejects_an_impossible_job_before_running_it(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    argv = ["run", "--platform", str(PLATFORM), "--memory", "900GB", "--", "touch", str(marker)]
    assert main(argv) == 2
    err = capfd.readouterr().err
    assert "exceeds queue normal (512 GiB)" in err and "queue hugemem allows" in err
    assert not marker.exists()


def test_platform_checks_pass_and_the_job_runs(capfd: pytest.CaptureFixture[str]) -> None:
    # --backend local: without it the platform's own scheduler (Slurm) would be used.
    argv = ["run", "--platform", str(PLATFORM), "--backend", "local", "--memory", "1GB",
            "--time", "1m", "--", "true"]  # fmt: skip
    assert main(argv) == 0
    assert "queue short is the cheapest" in capfd.readouterr().err


def test_the_resolver_chain_sizes_the_job(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 150 MB held for a second, 100 MB asked for: the local backend kills it for memory,
    # unless the test resolver plugin (it doubles memory) is enabled.
    hungry = "import time; b = bytearray(150 * 10**6); time.sleep(1); print('fed')"
    argv = ["run", "--backend", "local", "--memory", "100MB", "--", sys.executable, "-c", hungry]
    assert main(argv) != 0
    capfd.readouterr()
    monkeypatch.setenv("SEQERA_TEST_RESOLVER", "1")
    assert main(argv) == 0
    assert capfd.readouterr().out == "fed\n"


def test_the_runs_baseline_labels_reach_the_job(capfd: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--backend", "local", "--label", "team=genomics", "--", "sh", "-c",
            "echo $SEQERA_LABEL_SEQERA_ENGINE $SEQERA_LABEL_TEAM"]  # fmt: skip
    assert main(argv) == 0
    assert capfd.readouterr().out == "seqera genomics\n"


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """The console script running a job whose child prints its pid and sleeps."""
    if not SEQERA.exists():
        pytest.skip(f"no console script at {SEQERA}")
    process = subprocess.Popen(
        [str(SEQERA), "run", "--", "sh", "-c", "sleep 30 & echo $!; wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert process.stdout is not None
    # Streamed while the job runs: the job is still sleeping when its pid arrives.
    child = int(process.stdout.readline())
    assert alive(child)
    return process, child


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_cancels_the_job(tmp_path: Path, signum: int, status: int) -> None:
    process, child = _start(tmp_path)
    started = time.monotonic()
    process.send_signal(signum)
    _, err = process.communicate(timeout=10)
    assert process.returncode == status
    assert "cancelling job" in err
    assert time.monotonic() - started < 5
    assert not alive(child)


def test_console_script_exit_code(tmp_path: Path) -> None:
    if not SEQERA.exists():
        pytest.skip(f"no console script at {SEQERA}")
    done = subprocess.run(
        [str(SEQERA), "run", "--", "sh", "-c", "echo hi; exit 3"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert (done.returncode, done.stdout) == (3, "hi\n")
    # Nothing on stderr but the warning about the test fixture's deliberately broken plugin.
    assert all("seqera_test_resolver" in line for line in done.stderr.splitlines())


def test_history_records_each_run_and_sizes_the_next(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from seqera_core.history import open_history

    db = tmp_path / "h.db"
    # Touch 100 MB of memory so the local backend measures a real peak.
    script = "import time; b = bytearray(100_000_000); time.sleep(0.3)"
    argv = ["run", "--history", str(db), "--name", "grab", "--memory", "4GB", "--time", "1h",
            "-v", "--", sys.executable, "-c", script]  # fmt: skip
    assert main(argv) == 0
    assert main(argv) == 0
    err = capfd.readouterr().err
    _, records = open_history(db).attempts()
    first, second = records
    assert first.process == second.process == "grab" and first.succeeded
    assert first.engine == "seqera-run" and first.memory == 4 * 10**9
    assert first.peak_memory is not None and first.peak_memory >= 100_000_000
    assert first.realtime is not None and first.realtime >= 0.3
    # The second run asked for the first one's peak and a margin, not the declared 4 GB.
    assert second.memory == max(math.ceil(first.peak_memory * 1.2), 64 * 2**20)
    assert second.time == 600  # the floor: the first run took under a minute
    assert "sized by predictive" in err


def test_the_right_sizer_is_never_a_gate(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # A small job teaches the right-sizer that "py" uses ~30 MB; the next "py" uses 150 MB:
    # sized below what it asked for, it is killed for memory and sent again at once at
    # the size it asked for, where it succeeds (issue 31's report: it used to fail).
    history = str(tmp_path / "h.db")
    small = "x = bytearray(30_000_000)"
    large = "import time; x = bytearray(150_000_000); time.sleep(1)"
    common = ["run", "--history", history, "--name", "py", "--memory", "300MB", "-v", "--"]
    assert main([*common, sys.executable, "-c", small]) == 0
    capfd.readouterr()
    assert main([*common, sys.executable, "-c", large]) == 0
    err = capfd.readouterr().err
    assert "sent again at once at the size it asked for" in err
    assert "retry after out of memory" in err
    store = open_history(history)
    rows = [r for r in store.records() if r.process == "py"]
    store.close()
    assert [r.cause for r in rows[1:]] == ["out_of_memory", None]


def test_a_nameless_job_is_learned_as_its_whole_command(tmp_path: Path) -> None:
    history = str(tmp_path / "h.db")
    for size in (30_000_000, 150_000_000):
        script = f"x = bytearray({size})"
        assert main(["run", "--history", history, "--", sys.executable, "-c", script]) == 0
    store = open_history(history)
    processes = {r.process for r in store.records()}
    store.close()
    assert len(processes) == 2 and all("bytearray" in p for p in processes)


def test_an_interrupt_before_the_job_is_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Ctrl-C while the session is still being set up (before seqera run's own handling)
    from seqera_core.cli import run as run_command

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_command, "run", interrupted)
    assert main(["run", "--", "true"]) == 130
    err = capfd.readouterr().err
    assert err.strip() == "seqera: interrupted" and "Traceback" not in err
