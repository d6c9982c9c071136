"""The routing backend over a real local backend and a real Slurm client that cannot reach
a cluster (no ``sinfo`` on its PATH): constraints, refusals before any submission, the
reason carried by handles and labels, and exactly-once lookups across backends."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from seqera_core.backends import Backend, JobHandle, JobSpec, JobStatus, open_backend
from seqera_core.backends.route import RouteBackend, Unroutable, said
from seqera_core.errors import UsageError
from seqera_core.models import ResourceRequest
from seqera_core.platforms import load

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def opener(tmp: Path) -> Any:
    def open_one(name: str, fork_server: Any = None) -> Backend:
        if name == "local":
            return open_backend("local", work_dir=tmp / "local", cpus=2, kill_grace=0.3)
        # a Slurm client with no Slurm installed: its commands are not found (exit 127)
        return open_backend(name, work_dir=tmp / name, env={"PATH": str(tmp / "empty")})

    return open_one


@pytest.fixture
def route(tmp_path: Path) -> Iterator[RouteBackend]:
    backend = RouteBackend(("local", "slurm"), opener=opener(tmp_path), scheduler_every=0.1)
    yield backend
    backend.close()


def writes(out: Path, name: str, **request: Any) -> JobSpec:
    """A job that appends one line to ``out/name``: how many runs it had."""
    command = ["sh", "-c", f'echo run >> "{out / name}"']
    return JobSpec(name, command, ResourceRequest(process=name, **request), key=f"key-{name}")


def wait(backend: Backend, handles: Sequence[JobHandle], limit: float = 20) -> list[JobStatus]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        statuses = backend.poll(handles)
        if all(s.state.finished for s in statuses):
            return statuses
        time.sleep(0.05)
    raise AssertionError(f"still running after {limit} s")


def test_jobs_go_where_they_can_run_and_say_why(route: RouteBackend, tmp_path: Path) -> None:
    specs = [writes(tmp_path, f"small{n}", cpus=1) for n in range(3)]
    handles = route.submit(specs)
    assert [h.backend for h in handles] == ["local"] * 3
    for handle in handles:
        assert handle.route is not None
        assert said(handle.route).startswith("finish: local finish in")
        assert "slurm cannot: sinfo did not answer" in said(handle.route)
        decision = json.loads(handle.route)  # the history's route column: the numbers too
        local = next(o for o in decision["options"] if o["backend"] == "local")
        assert decision["backend"] == "local" and local["start"] >= 0
    statuses = wait(route, handles)
    assert all(s.state.value == "succeeded" for s in statuses)
    assert [s.handle for s in statuses] == handles  # the reason stays with the status
    for n in range(3):
        assert (tmp_path / f"small{n}").read_text() == "run\n"
    local = route.backends["local"]
    assert set(local.find(["key-small0"])) == {"key-small0"}


def test_a_job_no_backend_can_run_refuses_the_batch_before_anything_is_sent(
    route: RouteBackend, tmp_path: Path
) -> None:
    specs = [writes(tmp_path, "fine", cpus=1), writes(tmp_path, "huge", cpus=64)]
    with pytest.raises(Unroutable) as caught:
        route.submit(specs)
    message = str(caught.value)
    assert message.startswith("job huge: no backend can run it: local: 64 cores asked")
    assert "slurm: sinfo did not answer" in message
    time.sleep(0.3)
    assert not (tmp_path / "fine").exists()  # nothing of the batch went out
    assert route.backends["local"].find(["key-fine"]) == {}


def test_a_pinned_rule_goes_only_to_its_backend(tmp_path: Path) -> None:
    route = RouteBackend(("local", "slurm"), opener=opener(tmp_path), pin=["big=slurm"])
    try:
        with pytest.raises(Unroutable, match="local: rule big is pinned to slurm"):
            route.submit([writes(tmp_path, "big")])
        (handle,) = route.submit([writes(tmp_path, "other")])
        assert handle.backend == "local"
        wait(route, [handle])
    finally:
        route.close()


def test_a_named_queue_goes_only_to_a_backend_that_has_it(
    route: RouteBackend, tmp_path: Path
) -> None:
    with pytest.raises(Unroutable, match="local: has no queue 'long'"):
        route.explain([writes(tmp_path, "q", queue="long")])


def test_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"route\.objective: 'fast' is not one of finish, cost"):
        RouteBackend(("local",), opener=opener(tmp_path), objective="fast")
    with pytest.raises(UsageError, match=r"route\.pin: a=ecs: ecs is not one of route.backends"):
        RouteBackend(("local",), opener=opener(tmp_path), pin={"a": "ecs"})
    with pytest.raises(UsageError, match=r"route\.pin: .a. is not NAME=VALUE"):
        RouteBackend(("local",), opener=opener(tmp_path), pin=["a"])


def test_a_busy_machine_sends_the_next_job_elsewhere_only_if_it_ends_sooner(
    tmp_path: Path,
) -> None:
    """Two cores, each held 60 s by a routed job: a third waits for one of them locally
    (about 60 s), unless the other backend would end it sooner."""
    route = RouteBackend(("local",), opener=opener(tmp_path))
    try:
        long = [
            JobSpec(f"l{n}", ["sleep", "30"], ResourceRequest(cpus=1, time=60)) for n in range(2)
        ]
        handles = route.submit(long)
        (choice,) = route.explain([JobSpec("next", ["true"], ResourceRequest(cpus=1, time=60))])
        assert choice.backend == "local"
        assert choice.options[0].start >= 55  # behind the two running jobs
        route.cancel(handles)
        assert all(s.state.value == "cancelled" for s in wait(route, handles))
        (after,) = route.explain([JobSpec("next", ["true"], ResourceRequest(cpus=1, time=60))])
        assert after.options[0].start < 1  # cancelled jobs hold no core
    finally:
        route.close()


def test_find_asks_every_backend(route: RouteBackend, tmp_path: Path) -> None:
    (handle,) = route.submit([writes(tmp_path, "once")])
    wait(route, [handle])
    # Slurm's work directory holds no job of either key: it knows they never went there
    found = route.find(["key-once", "key-never"])
    assert list(found) == ["key-once"]
    assert (found["key-once"].backend, found["key-once"].native_id) == ("local", handle.native_id)


def with_ecs(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The local machine and an ECS client (nothing is sent: only verdicts are asked)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # never reached here
    local = opener(tmp)

    def open_one(name: str, fork_server: Any = None) -> Backend:
        if name == "ecs":
            return open_backend("ecs", cluster="c", execution_role="arn:aws:iam::1:role/r")
        return local(name, fork_server)

    return open_one


def test_only_a_job_the_engine_can_stage_may_leave_the_shared_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = RouteBackend(("local", "ecs"), opener=with_ecs(tmp_path, monkeypatch))
    try:
        wide = JobSpec("wide", ["true"], ResourceRequest(process="wide", cpus=8))
        local, ecs = route.verdicts(wide)
        assert local.refused == "8 cores asked, its largest node has 2"
        assert (
            ecs.refused == "no shared file system, and the engine does not stage this job's files"
        )
        with pytest.raises(Unroutable, match=r"local: 8 cores asked.*; ecs: no shared file"):
            route.explain([wide])
        built: list[str] = []

        def staged() -> JobSpec:
            built.append("staged")
            return JobSpec("wide", ["sh", "-c", "fetch; run; put"], wide.request)

        stageable = attrs.evolve(wide, staged=staged)
        (choice,) = route.explain([stageable])
        assert choice.backend == "ecs" and choice.reason.startswith("finish: ecs finish in")
        assert built == []  # the staged form is built only when the job is sent there
    finally:
        route.close()


def test_polls_go_on_while_a_job_uploads_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building a staged form uploads the job's inputs (seconds for a large one): the
    engine's status thread must not wait for it; an upload that fails sends nothing."""
    route = RouteBackend(("local", "ecs"), opener=with_ecs(tmp_path, monkeypatch))
    try:
        (here,) = route.submit([JobSpec("here", ["true"], ResourceRequest(process="here"))])
        polled, waited = threading.Event(), []

        def staged() -> JobSpec:
            threading.Thread(target=lambda: (route.poll([here]), polled.set()), daemon=True).start()
            waited.append(polled.wait(10))
            raise RuntimeError("upload failed")

        wide = JobSpec("wide", ["true"], ResourceRequest(process="wide", cpus=8), staged=staged)
        with pytest.raises(RuntimeError, match="upload failed"):
            route.submit([wide])
        assert waited == [True]
        wait(route, [here])
    finally:
        route.close()


def test_the_cost_ceiling_is_required_and_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"route\.max_cost_per_hour_saved: not set"):
        RouteBackend(("local",), opener=opener(tmp_path), objective="cost-per-hour-saved")
    with pytest.raises(UsageError, match=r"route\.max_cost_per_hour_saved: '-1' is not a number"):
        RouteBackend(("local",), opener=opener(tmp_path), objective="cost-per-hour-saved",
                     max_cost_per_hour_saved="-1")  # fmt: skip
    route = RouteBackend(("local",), opener=opener(tmp_path), objective="cost-per-hour-saved",
                         max_cost_per_hour_saved="0.5")  # fmt: skip
    try:
        (choice,) = route.explain([JobSpec("j", ["true"], ResourceRequest(cpus=1))])
        assert choice.reason.startswith("cost-per-hour-saved: local cheapest at 0")
    finally:
        route.close()


def test_the_platforms_queue_binds_only_its_scheduler(tmp_path: Path) -> None:
    """Every job gets one of the platform's queues; another backend judges it without."""
    platform = load(Path(__file__).parents[4] / "shared" / "platforms" / "slurm-cluster.yaml")
    route = RouteBackend(("local", "slurm"), opener=opener(tmp_path), platform=platform)
    try:
        local, slurm = route.verdicts(writes(tmp_path, "q", queue="short"))
        assert local.refused is None and slurm.refused is not None  # no cluster answers here
        (local,) = route.verdicts(writes(tmp_path, "q", queue="gpu-a100"))[:1]
        assert local.refused == "has no queue 'gpu-a100'"  # not the platform's: it binds
    finally:
        route.close()
