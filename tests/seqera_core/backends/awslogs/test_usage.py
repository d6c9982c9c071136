"""The usage wrapper ECS tasks and AWS Batch jobs run under, run by the real ``sh`` here: exit
status, stdin, signals, the line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from seqera_core.backends.awslogs import MARKER, parse_cpu, parse_usage, wrapped

_CGROUP_FILES = ("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes")


def _peak_readable() -> bool:
    return any(os.access(path, os.R_OK) for path in _CGROUP_FILES)


def test_exit_status_stdin_and_the_usage_line() -> None:
    script = "import sys; b = bytearray(50 * 10**6); print(sys.stdin.read().upper()); sys.exit(3)"
    done = subprocess.run(
        wrapped([sys.executable, "-c", script]), input="hi", capture_output=True, text=True
    )
    assert done.returncode == 3
    assert done.stdout == "HI\n"
    lines = done.stderr.splitlines()
    if _peak_readable():
        # the cgroup is this machine's (a container's own in ECS): at least what was held
        (line,) = lines
        peak = parse_usage(line)
        assert peak is not None and peak >= 50 * 10**6
        if os.access("/sys/fs/cgroup/cpu.stat", os.R_OK):
            # the cgroup's CPU time so far: at least what this interpreter has used
            cpu = parse_cpu(line)
            assert cpu is not None and cpu >= time.process_time()
    else:
        assert lines == []


def test_stop_task_sigterm_reaches_the_command() -> None:
    script = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    print('terminated', flush=True)\n"
        "    sys.exit(143)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen(
        wrapped([sys.executable, "-c", script]), stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert out == "terminated\n" and process.returncode == 143
    assert time.monotonic() - started < 10


def test_arguments_pass_through_unchanged() -> None:
    argv = ["printf", "%s|", "a b", "$HOME", "; rm -rf /", "*"]
    done = subprocess.run(wrapped(argv), capture_output=True, text=True, check=True)
    assert done.stdout == "a b|$HOME|; rm -rf /|*|"


def test_parse_cpu() -> None:
    line = f"{MARKER} peak_memory_bytes=123456 cpu_usec=2500000"
    assert parse_usage(line) == 123456 and parse_cpu(line) == 2.5
    assert parse_cpu(f"{MARKER} peak_memory_bytes=123456") is None  # a cgroup that did not say
    assert parse_cpu("cpu_usec=1") is None


def test_parse_usage() -> None:
    assert parse_usage(f"{MARKER} peak_memory_bytes=123456") == 123456
    assert parse_usage(f"{MARKER} peak_memory_bytes=123456\n") == 123456
    assert parse_usage("hello") is None
    assert parse_usage(f"{MARKER} peak_memory_bytes=max") is None
