"""``seqera-sidecar config --per-task``: the generated closures evaluated by Groovy (the
language Nextflow runs them in) against a real sidecar, and the file read by Groovy's
ConfigSlurper with the rewrite Nextflow's classic parser adds.

Groovy and a JVM start slowly (seconds), so each test batches its cases into one
``groovy`` run of ``data/pertask_harness.groovy``. Without ``groovy`` the tests skip on a
dev box and fail under ``CI=true`` (Debian's ``groovy`` and ``openjdk-17-jre-headless``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seqera_core.dialects.groovy import groovy_string
from seqera_core.history import TaskRecord, open_history
from seqera_core.labels import decode_labels, encode_labels
from seqera_sidecar.cli import main
from seqera_sidecar.pertask import Declared, Settings, per_task_config

from .conftest import Served, start_sidecar, stop_sidecar

HARNESS = Path(__file__).parent / "data" / "pertask_harness.groovy"
GB = 10**9


def _groovy() -> str:
    found = shutil.which("groovy")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("groovy is not installed (apt-get install groovy openjdk-17-jre-headless)")
        pytest.skip("groovy is not installed (Debian: groovy openjdk-17-jre-headless)")
    return found


def _records() -> list[TaskRecord]:
    """ALIGN: memory grows with its input; QC: no input sizes, about 1 GB."""
    records = []
    for i in range(12):
        size = (i + 1) * GB
        records.append(TaskRecord(run_id="r1", task_id=f"a{i}", process="NF:ALIGN", succeeded=True,
                                  cpus=4, memory=16 * GB, time=7200, peak_memory=size // 2 + GB,
                                  realtime=600 + 60 * i, input_bytes=size,
                                  cpu_percent=380))  # fmt: skip
        records.append(TaskRecord(run_id="r1", task_id=f"q{i}", process="NF:QC", succeeded=True,
                                  cpus=1, memory=4 * GB, time=3600, peak_memory=GB + i * 10**7,
                                  realtime=120 + i))  # fmt: skip
    return records


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pertask") / "history.db"
    store = open_history(str(path))
    store.record(_records())
    store.close()
    return path


@pytest.fixture(scope="module")
def sidecar(history: Path) -> Iterator[Served]:
    process, info = start_sidecar(history, "t0ken")
    try:
        yield info
    finally:
        stop_sidecar(process)


def _config(history: Path, tmp: Path, name: str, *extra: str) -> Path:
    out = tmp / name
    assert main(["config", "--per-task", "--history", str(history), "-o", str(out), *extra]) == 0
    return out


def _run(spec: dict[str, Any], tmp: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    groovy = _groovy()
    path = tmp / "spec.json"
    path.write_text(json.dumps(spec))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEQERA_SIDECAR")}
    java = shutil.which("java")
    if not environ.get("JAVA_HOME") and java:  # Debian's groovy wants it, or default-java
        environ["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
    done = subprocess.run([groovy, str(HARNESS), str(path)], capture_output=True, text=True,
                          env={**environ, **env}, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _resolve(sidecar: Served, body: dict[str, Any]) -> dict[str, Any]:
    with sidecar.client() as client:
        answer = client.post("/v1/resources/resolve", json=body)
    assert answer.status_code == 200
    got: dict[str, Any] = answer.json()
    return got


def _resolve_calls(sidecar: Served) -> float:
    with sidecar.client() as client:
        text = client.get("/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith('seqera_sidecar_requests_total{endpoint="resolve"'))  # fmt: skip


WORKFLOW = {"runName": "tiny_curie", "sessionId": "5e55-10n", "projectName": "nf-core/x",
            "userName": "ana", "resume": False}  # fmt: skip


def test_closures_answer_from_the_sidecar(history: Path, sidecar: Served, tmp_path: Path) -> None:
    # a long timeout: on a loaded machine the default 2 s would fall back (tested below)
    config = _config(history, tmp_path, "pertask.config", "--url", sidecar.url,
                     "--cluster-options=--qos=high", "--timeout-ms", "60000")  # fmt: skip
    inputs = []
    for size in (3 * GB, 9 * GB):  # sparse files: sizes without the bytes
        path = tmp_path / f"in{size}.bin"
        with path.open("wb") as handle:
            handle.truncate(size)
        inputs.append(str(path))
    cases = [
        {"process": "NF:ALIGN", "attempt": 1, "executor": "slurm", "inputs": [inputs[0]],
         "resourceLabels": {"team": "gen omics"}, "workflow": WORKFLOW,
         "hash": "ab12cd34ef56ab78cd90ef12ab34cd56"},
        {"process": "NF:ALIGN", "attempt": 1, "executor": "pbspro", "inputs": [inputs[1]],
         "resourceLabels": {"team": "a;b"}, "workflow": WORKFLOW},
        {"process": "NF:QC", "attempt": 1, "executor": "sge", "workflow": WORKFLOW},
        {"process": "NF:QC", "attempt": 1, "executor": "lsf", "workflow": WORKFLOW},
        {"process": "NF:QC", "attempt": 2, "exitStatus": 137, "executor": "local"},
        {"process": "NF:UNSEEN", "attempt": 1, "executor": "slurm"},
    ]  # fmt: skip
    before = _resolve_calls(sidecar)
    results = _run({"configs": [{"path": str(config), "cases": cases}]}, tmp_path,
                   {"SEQERA_SIDECAR_TOKEN": "t0ken"})  # fmt: skip
    # the sidecar's own answers to what the closures ask
    declared = {"NF:ALIGN": {"cpus": 4, "memory_bytes": 16 * GB, "time_seconds": 7200},
                "NF:QC": {"cpus": 1, "memory_bytes": 4 * GB, "time_seconds": 3600}}  # fmt: skip
    for case, result in zip(cases[:5], results[:5], strict=True):
        body: dict[str, Any] = {"process": case["process"], "attempt": case["attempt"],
                                **declared[case["process"]]}  # fmt: skip
        if case.get("inputs"):
            body["input_bytes"] = Path(case["inputs"][0]).stat().st_size
        expected = _resolve(sidecar, body)
        assert result["source"] == "sidecar"
        assert result["cpus"] == expected["cpus"]
        assert result["memory"] == expected["memory_bytes"]
        assert result["time"] == expected["time_seconds"] * 1000  # Nextflow: a number is ms
    # input sizes reach the model: the larger input gets more memory
    assert results[1]["memory"] > results[0]["memory"]
    # the retry after exit 137 told the sidecar what attempt 1 was given (the history
    # holds no QC failure: without it the retry would get attempt 1's memory again)
    assert results[4]["memory"] > results[2]["memory"]
    assert results[1]["memory"] > results[0]["memory"]
    # labels: the user's clusterOptions first, then the scheduler's form of the labels
    slurm = results[0]["clusterOptions"]
    assert slurm.startswith("--qos=high --comment=")
    labels = decode_labels(slurm.split("--comment=", 1)[1])
    assert labels == {
        "nextflow/engine": "nextflow",
        "nextflow/run-name": "tiny_curie",
        "nextflow/run-id": "5e55-10n",
        "nextflow/project": "nf-core/x",
        "nextflow/user": "ana",
        "nextflow/resume": "false",
        "team": "gen omics",
    }
    assert slurm.split("--comment=", 1)[1] == encode_labels(labels)  # the core's own encoding
    assert results[1]["clusterOptions"].startswith("--qos=high -v SEQERA_LABELS=")
    assert decode_labels(results[1]["clusterOptions"].split("=", 2)[2])["team"] == "a;b"
    assert results[2]["clusterOptions"].startswith("--qos=high -ac SEQERA_LABELS=")
    assert results[3]["clusterOptions"].startswith("--qos=high -Jd SEQERA_LABELS=")
    assert results[4]["clusterOptions"] == "--qos=high"  # local: nothing to label
    assert results[5]["selector"] is None  # never seen: its own declaration stands
    # the weblog records the task that named its hash with the input size it was asked
    # with (not rchar), and with what its trace says it was given
    trace = {"task_id": "900", "process": "NF:ALIGN", "status": "COMPLETED", "exit": 0,
             "attempt": 1, "memory": results[0]["memory"], "cpus": results[0]["cpus"],
             "peak_rss": 2 * GB, "realtime": 700_000, "rchar": 5 * GB}  # fmt: skip
    events = [
        {
            "runName": "r",
            "runId": "loop",
            "event": "process_completed",
            "utcTime": "2026-11-27T00:00:00Z",
            "trace": {**trace, **extra},
        }
        for extra in ({"hash": "ab/12cd34"}, {"task_id": "901", "hash": "ff/000000"})
    ]
    with sidecar.client() as client:
        assert client.post("/v1/weblog", json=events).status_code == 202
    assert sidecar.history is not None
    store = open_history(str(sidecar.history))
    recorded = {r.task_id: r for r in store.records(["loop"])}
    store.close()
    assert recorded["900"].input_bytes == 3 * GB and recorded["901"].input_bytes == 5 * GB
    assert recorded["900"].memory == results[0]["memory"]
    # one call per question: ALIGN x2 (two input sizes), QC attempt 1 (shared by sge and
    # lsf), QC attempt 2; not one per directive (4 directives x 5 tasks)
    assert _resolve_calls(sidecar) - before == 4 + 5  # + the five asked directly above


class _Silent:
    """A server that accepts connections and never answers: a sidecar that hangs."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.port = self.socket.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.socket.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.socket.close()
        for held in self.held:
            held.close()


def test_closures_fall_back_when_the_sidecar_is_down_or_slow(history: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    silent = _Silent()
    try:
        down = _config(history, tmp_path, "down.config", "--url", f"http://127.0.0.1:{closed}")
        slow = _config(history, tmp_path, "slow.config", "--url",
                       f"http://127.0.0.1:{silent.port}", "--timeout-ms", "2000")  # fmt: skip
        cases = [{"process": "NF:ALIGN", "attempt": 1, "executor": "slurm"},
                 {"process": "NF:QC", "attempt": 1, "executor": "local"}]  # fmt: skip
        configs = [{"path": str(down), "cases": cases}, {"path": str(slow), "cases": cases}]
        results = _run({"configs": configs}, tmp_path, {})
    finally:
        silent.close()
    for result in results:
        assert result["source"] == "declared"
    for result in (results[0], results[2]):
        assert (result["cpus"], result["memory"], result["time"]) == (4, 16 * GB, 7200 * 1000)
    # the slow sidecar costs one timeout; after it the back-off answers at once
    assert 1900 <= results[2]["millis"] < 30_000
    assert results[3]["millis"] < 1000  # far below the 2 s it would wait again


def test_config_slurper_reads_the_file(history: Path, tmp_path: Path) -> None:
    """Both block kinds, every name quoted: a name with a quote or a regex character."""
    store = open_history(str(tmp_path / "odd.db"))
    store.record([TaskRecord(run_id="r", task_id="1", process="A:B'C.D$x", succeeded=True,
                             memory=GB, peak_memory=GB // 2, realtime=60, time=600)])  # fmt: skip
    store.close()
    config = _config(tmp_path / "odd.db", tmp_path, "odd.config")
    results = _run({"configs": [{"path": str(config), "cases": [
        {"process": "A:B'C.D$x", "attempt": 1, "executor": "local"},
        {"process": "A:B'CxD$x", "attempt": 1, "executor": "local"},
    ]}]}, tmp_path, {"SEQERA_SIDECAR_URL": "http://127.0.0.1:9"})  # fmt: skip
    assert results[0]["selector"] is not None and results[0]["memory"] == GB
    assert results[1]["selector"] is None  # the '.' is not a wildcard


def test_a_retry_is_sized_from_the_kill_it_reports(tmp_path: Path) -> None:
    """The retry's extra: a kill the history has not seen yet is learned, bad values are 400."""
    from starlette.testclient import TestClient

    from seqera_sidecar import create_app

    store = open_history(str(tmp_path / "h.db"))
    store.record(_records())
    client = TestClient(create_app(store))
    ask = {"process": "NF:QC", "cpus": 1, "memory_bytes": 4 * GB, "time_seconds": 3600}
    first = client.post("/v1/resources/resolve", json={**ask, "attempt": 1}).json()
    plain = client.post("/v1/resources/resolve", json={**ask, "attempt": 2}).json()
    assert plain == first  # no kill known: a retry is a first attempt again
    extra = {"nextflow.exit_status": "137",
             "nextflow.previous_memory_bytes": str(first["memory_bytes"])}  # fmt: skip
    retry = client.post("/v1/resources/resolve", json={**ask, "attempt": 2, "extra": extra})
    assert retry.json()["memory_bytes"] > first["memory_bytes"]
    assert store.count() == len(_records())  # learned, not stored: the weblog's row is
    for bad in ({"nextflow.exit_status": "x"}, {**extra, "nextflow.previous_memory_bytes": "0"}):
        refused = client.post("/v1/resources/resolve", json={**ask, "attempt": 2, "extra": bad})
        assert refused.status_code == 400
        assert "$.extra.nextflow." in refused.json()["problems"][0]


def test_groovy_string_escapes() -> None:
    # the per-task config's literals: the core's escaping, in printable ASCII alone
    assert groovy_string("a'b\\c\n$x", ascii_only=True) == "'a\\'b\\\\c\\n$x'"
    assert groovy_string("é😀", ascii_only=True) == "'\\u00e9\\ud83d\\ude00'"
    config = per_task_config({"é😀": Declared(cpus=1)}, Settings(url="http://h/é'"))
    assert config.isascii() and "withName: '\\u00e9\\ud83d\\ude00'" in config
    assert "?: 'http://h/\\u00e9\\''" in config


def test_declared_values_are_the_first_attempt_first_seen(tmp_path: Path) -> None:
    from seqera_sidecar.pertask import declared_values

    store = open_history(str(tmp_path / "h.db"))
    store.record([
        TaskRecord(run_id="r", task_id="1", process="P", succeeded=False, attempt=1, cpus=2,
                   memory=GB, time=60),
        TaskRecord(run_id="r", task_id="1", process="P", succeeded=True, attempt=2, cpus=2,
                   memory=2 * GB, time=60, peak_memory=GB, realtime=5),
        TaskRecord(run_id="s", task_id="1", process="P", succeeded=True, attempt=1, cpus=1,
                   memory=GB // 2, time=30, peak_memory=GB // 4, realtime=5),
    ])  # fmt: skip
    assert declared_values(store) == {"P": Declared(2, GB, 60)}


def test_config_refuses_a_url_that_is_not_http(tmp_path: Path, capsys: Any) -> None:
    for url in ("ftp://x", "http://a'b", "http://a b"):
        code = main(["config", "--per-task", "--history", str(tmp_path / "h.db"), "--url", url])
        assert code == 2
        assert "--url" in capsys.readouterr().err
