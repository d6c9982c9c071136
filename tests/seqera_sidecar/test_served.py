"""The sidecar as a process on 127.0.0.1: the core's HttpResolver, restarts, the CLI."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from seqera_core.dialects.nextflow import parse_memory
from seqera_core.history import TaskRecord, open_history
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import HttpResolver

from .conftest import Served, expected_peaks, recorded_events, start_sidecar, stop_sidecar


def test_the_cores_http_resolver_points_at_it(served: Served) -> None:
    headers = {"Authorization": f"Bearer {served.token}"}
    httpx.post(f"{served.url}/v1/weblog", json=recorded_events(), headers=headers, timeout=60)
    with HttpResolver(served.url, token=served.token) as resolver:
        process = "NFCORE_CHIPSEQ:CHIPSEQ:PREPARE_GENOME:GTF2BED"
        answer = resolver.resolve(ResourceRequest(process=process, memory=2**30))
        assert answer is not None
        # The default predictive resolver: no input size, so the largest peak seen.
        assert answer.memory == math.ceil(expected_peaks()[process] * 1.2)
        many = resolver.resolve_many(
            [ResourceRequest(process="NEW"), ResourceRequest(process=process)]
        )
        assert many[0] is None and many[1] == answer


def test_history_survives_a_restart(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    process, served = start_sidecar(history)
    try:
        events = recorded_events()[:300]
        assert httpx.post(f"{served.url}/v1/weblog", json=events, timeout=60).status_code == 202
    finally:
        stop_sidecar(process)
    process, served = start_sidecar(history)
    try:
        body = {"process": "NFCORE_CHIPSEQ:CHIPSEQ:PREPARE_GENOME:GTF2BED"}
        answer = httpx.post(f"{served.url}/v1/resources/resolve", json=body, timeout=10)
        assert answer.status_code == 200
    finally:
        stop_sidecar(process)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seqera_sidecar", *argv],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_resolve_and_config_from_the_command_line(tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    process, served = start_sidecar(history)
    try:
        httpx.post(f"{served.url}/v1/weblog", json=recorded_events(), timeout=60)
    finally:
        stop_sidecar(process)
    name = "NFCORE_CHIPSEQ:CHIPSEQ:PREPARE_GENOME:GTF2BED"
    done = _cli("resolve", "--history", str(history), "--process", name, "--cpus", "2",
                "--memory", "4 GB", "--time", "1h")  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "cpus 2" and lines[1].startswith("memory '") and "MB'" in lines[1]
    assert lines[3] == "// from predictive"
    kept = _cli("resolve", "--history", str(history), "--process", name, "--resolver", "max")
    assert kept.returncode == 0 and kept.stdout.splitlines()[-1] == "// from maximum"
    config = tmp_path / "resources.config"
    assert _cli("config", "--history", str(history), "-o", str(config)).returncode == 0
    text = config.read_text()
    # the predictive right-sizer leaves cpus to the process (no --apply-cpus); each block
    # says what it rests on
    assert text.startswith("//") and f"withName: '{name}' {{ memory = " in text
    assert f"    // {name}: " in text and " x the largest peak (" in text
    maximum = tmp_path / "max.config"
    assert _cli("config", "--history", str(history), "--resolver", "max", "-o",
                str(maximum)).returncode == 0  # fmt: skip
    assert f"withName: '{name}' {{ cpus = " in maximum.read_text()
    bad = _cli("resolve", "--history", str(history), "--process", name, "--memory", "4 gigs")
    assert bad.returncode == 2 and "memory" in bad.stderr


def test_a_self_sizing_process_keeps_its_memory_unless_the_user_opts_out(tmp_path: Path) -> None:
    # nf-core/eager's MarkDuplicates: retried at 2x and 3x, it used most of what it got
    history, gb = tmp_path / "h.db", 10**9
    usual = [(int((5 + i / 10) * gb), (14 + i / 20) * gb, 17.2 * gb) for i in range(30)]
    retried = [(6 * gb, 32.1 * gb, 34.4 * gb), (6.4 * gb, 32.8 * gb, 34.4 * gb),
               (7.2 * gb, 45.4 * gb, 51.5 * gb)]  # fmt: skip
    store = open_history(history)
    store.record(TaskRecord("before", str(i), "MARKDUP", True, memory=int(given),
                            peak_memory=int(peak), realtime=60.0, input_bytes=size)
                 for i, (size, peak, given) in enumerate(usual + retried))  # fmt: skip
    store.close()
    ask = ("resolve", "--history", str(history), "--process", "MARKDUP", "--memory", "60 GB")
    kept, shrunk = _cli(*ask), _cli(*ask, "--shrink-self-sizing")
    assert kept.returncode == shrunk.returncode == 0, kept.stderr + shrunk.stderr
    # Flagged from its history (its retries used most of 2x and 3x, in proportion), it
    # keeps the allocation it was seen tracking at (17.2 GB: issue 31's rule, no longer
    # its declared 60 GB), where the model alone would size it from its usual peaks.
    assert kept.stdout.splitlines()[1] == "memory '16404 MB'"
    shrunk_to = parse_memory(shrunk.stdout.splitlines()[1].split(" ", 1)[1].strip("'"))
    assert 45.4 * gb <= shrunk_to < 60 * 2**30
    by_environment = subprocess.run(
        [sys.executable, "-m", "seqera_sidecar", *ask], capture_output=True, text=True,
        timeout=60, check=False, env={**os.environ, "SEQERA_SIZING_SHRINK_SELF_SIZING": "true"},
    )  # fmt: skip
    assert by_environment.stdout == shrunk.stdout


def test_refuses_to_listen_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    done = _cli("serve", "--host", "0.0.0.0", "--history", str(tmp_path / "h.db"))
    assert done.returncode == 2 and "token" in done.stderr


def test_dispatching_needs_a_token(tmp_path: Path) -> None:
    argv = ("serve", "--backend", "local", "--history", str(tmp_path / "h.db"),
            "--state", str(tmp_path / "runs.db"))  # fmt: skip
    done = _cli(*argv)
    assert done.returncode == 2
    assert "--backend local" in done.stderr and "--token-file" in done.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert _cli(*argv, "--token-file", str(empty)).returncode == 2
    missing = _cli(*argv, "--token-file", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "cannot be read" in missing.stderr


def test_the_token_from_a_file_a_real_host_check_and_raw_header_bytes(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("fr0m-a-file\n")
    secret.chmod(0o600)
    extra = ("--token-file", str(secret), "--backend", "local", "--state", str(tmp_path / "r.db"))
    process, served = start_sidecar(tmp_path / "h.db", None, *extra)
    try:
        good = {"Authorization": "Bearer fr0m-a-file"}
        assert httpx.get(f"{served.url}/metrics", headers=good).status_code == 200
        for raw in (b"Bearer \xff\xfe", "Bearer ñ".encode(), "Bearer fr0m-a-fil\xe9".encode()):
            answer = httpx.get(f"{served.url}/metrics", headers={"Authorization": raw})
            assert answer.status_code == 401, raw
        rebound = httpx.get(f"{served.url}/health", headers={"Host": "attacker.example"})
        assert rebound.status_code == 400
        as_text = httpx.post(f"{served.url}/v1/weblog", content=b'{"event": "started"}',
                             headers={**good, "Content-Type": "text/plain"})  # fmt: skip
        assert as_text.status_code == 415
        huge = httpx.post(f"{served.url}/v1/weblog", content=b"[" + b"1," * 5_000_000 + b"1]",
                          headers={**good, "Content-Type": "application/json"})  # fmt: skip
        assert huge.status_code == 413
    finally:
        stop_sidecar(process)


def test_a_token_on_the_command_line_is_warned_about(tmp_path: Path) -> None:
    process, served = start_sidecar(tmp_path / "h.db", None, "--token", "visible")
    try:
        answer = httpx.get(f"{served.url}/metrics", headers={"Authorization": "Bearer visible"})
        assert answer.status_code == 200
    finally:
        stop_sidecar(process)
    assert process.stderr is not None and "visible to every user in `ps`" in process.stderr.read()


@pytest.mark.parametrize("command", ["serve", "config"])
def test_a_malformed_postgresql_url_is_a_clear_error_without_the_password(
    tmp_path: Path, command: str
) -> None:
    done = _cli(command, "--history", "postgresql://alice:Sup3rS3cret@[::1/db")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Sup3rS3cret" not in done.stderr
    assert "history: 'postgresql://***@[::1/db' is not valid" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "argv", [("evaluate", "/dev/zero"), ("serve", "--token-file", "/dev/zero", "--port", "0",
                                         "--history", "h.db")]
)  # fmt: skip
def test_dev_zero_as_a_trace_or_a_token_file_is_read_to_a_bound(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    done = subprocess.run([sys.executable, "-m", "seqera_sidecar", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "/dev/zero" in done.stderr, done.stderr


def test_serve_says_where_it_listens_and_whether_it_needs_a_token(tmp_path: Path) -> None:
    # the default --log-level warning hides uvicorn's own line: a user saw nothing (issue 29)
    for token, guard in ((None, "no token"), ("s3cret", "requests need the bearer token")):
        process, served = start_sidecar(tmp_path / "h.db", token)
        stop_sidecar(process)
        assert process.stderr is not None
        said = process.stderr.read()
        assert f"seqera-sidecar: listening on {served.url} ({guard}" in said, said
        assert "s3cret" not in said
