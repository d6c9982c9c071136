"""The moto[server] ECS emulator on 127.0.0.1, and the in-process edits it needs.

ThreadedMotoServer runs in this process, so its state (``moto.backends.get_backend``) can
be edited directly: that is how a test gives a stopped task an exit code, a stopCode or a
stoppedReason, which the emulator never produces itself. Clients reach it over HTTP only.

Emulator gaps worked around here (the backend is written for real AWS):

* No ECS Managed Instances capacity providers: CreateCapacityProvider only takes an Auto
  Scaling group. :meth:`Emulator.create_cluster` creates the provider in-process and gives
  it the ``managedInstancesProvider`` and ``type`` that DescribeCapacityProviders returns
  on AWS (moto serialises whatever attributes its model carries).
* RunTask with a capacity provider other than FARGATE looks for registered EC2 container
  instances, and sums container-level memory (None for a task-level-only definition).
  Managed instances place their own tasks, like Fargate, so the shim sends such tasks down
  moto's Fargate path and sizes them from the task-level cpu and memory. The task keeps
  the capacity provider's name.
* The emulated container prints its command: RunTask writes ``" ".join(command)`` to the
  awslogs stream the task definition implies, so ``logs()`` has something real to read.
  Under the backend's usage wrapper (`seqera_core.backends.awslogs`), the real wrapper
  script runs here with ``echo`` in front of the command, so the stream also gets the
  wrapper's own ``seqera-usage`` line (this machine's cgroup peak, not a container's).
* Tasks start RUNNING and advance one state per DescribeTasks (moto's ``manual`` state
  transition, ``times`` 1): RUNNING, DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import logging
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

from moto import backends
from moto.moto_api import state_manager
from moto.server import ThreadedMotoServer

from seqera_core.backends.awslogs import MARKER

__all__ = [
    "ACCOUNT",
    "EXECUTION_ROLE",
    "REGION",
    "Emulator",
    "ThrottlingProxy",
    "moto_ecs",
    "put_log",
]

ACCOUNT = "123456789012"  # moto's default account
REGION = "us-east-1"
EXECUTION_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ecsTaskExecutionRole"


class Emulator:
    """A running moto server: its URL, the environment boto3 needs, and state edits."""

    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def env(self) -> dict[str, str]:
        """Dummy credentials and the endpoint: what boto3's standard chain reads."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }

    def reset(self) -> None:
        """Forget every resource, then put the shim back on the new ECS state."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        self.transitions(times=1)
        _install_shim(self.ecs_state)

    @staticmethod
    def transitions(times: int) -> None:
        """How many DescribeTasks calls a task stays in each state for."""
        state_manager.set_transition(
            model_name="ecs::task", transition={"progression": "manual", "times": times}
        )

    @property
    def ecs_state(self) -> Any:
        """moto's in-process ECS state for the account and region."""
        return backends.get_backend("ecs")[ACCOUNT][REGION]

    def create_cluster(
        self,
        name: str = "seqera",
        *,
        provider: str = "seqera-managed",
        storage_gib: int | None = 200,
        managed: bool = True,
    ) -> None:
        """A cluster with one capacity provider: managed instances, or an ASG one."""
        state = self.ecs_state
        created = state.create_capacity_provider(provider, {"autoScalingGroupArn": "asg"}, None)
        if managed:
            template: dict[str, Any] = {"ec2InstanceProfileArn": f"arn:aws:iam::{ACCOUNT}:x"}
            if storage_gib is not None:
                template["storageConfiguration"] = {"storageSizeGiB": storage_gib}
            created.auto_scaling_group_provider = None
            created.managed_instances_provider = {
                "infrastructureRoleArn": f"arn:aws:iam::{ACCOUNT}:role/ecsInfrastructureRole",
                "instanceLaunchTemplate": template,
            }
            created.type = "MANAGED_INSTANCES"
        state.create_cluster(name, capacity_providers=[provider])

    def throttling(
        self, throttle: dict[str, int], every: dict[str, int] | None = None
    ) -> ThrottlingProxy:
        """A proxy in front of this emulator that throttles the first calls of operations
        (``throttle``), or every Nth call of an operation (``every``)."""
        return ThrottlingProxy(self.url, throttle, every)

    def hold(self) -> None:
        """Keep tasks RUNNING from now on until a test stops them."""
        self.transitions(times=1000)

    def started(self) -> list[Any]:
        """moto's records of the tasks started on cluster ``seqera``, oldest first."""
        return list(self.ecs_state.tasks.get("seqera", {}).values())

    @staticmethod
    def command(task: Any) -> list[str]:
        """The command a task's one container override runs."""
        (override,) = task.overrides["containerOverrides"]
        return list(override["command"])

    def end(self, task: Any, exit_code: int, reason: str | None = None) -> None:
        """:meth:`stop` a task whose container exited with ``exit_code``."""
        self.stop(task.task_arn, exit_code=exit_code, reason=reason or "")

    def task(self, arn: str) -> Any:
        """moto's record of a task."""
        for tasks in self.ecs_state.tasks.values():
            if arn in tasks:
                return tasks[arn]
        raise KeyError(arn)

    def stop(
        self,
        arn: str,
        *,
        exit_code: int | None = 0,
        stop_code: str | None = "EssentialContainerExited",
        reason: str = "",
        container_reason: str | None = None,
    ) -> None:
        """End a task as ECS would: STOPPED with an exit code, stopCode and reasons."""
        task = self.task(arn)
        task.last_status = "STOPPED"
        task.desired_status = "STOPPED"
        task.stop_code = stop_code
        task.stopped_reason = reason
        task.containers[0].exitCode = exit_code
        if container_reason is not None:
            task.containers[0].reason = container_reason


def _install_shim(state: Any) -> None:
    run_task = state.run_task

    def managed_run_task(*args: Any) -> list[Any]:
        # moto's responses call run_task(cluster, definition, count, overrides, started_by,
        # tags, launch_type, network, group, platform_version, capacity_provider_strategy)
        strategy = args[10]
        provider = state._get_provider(strategy[0]["capacityProvider"]) if strategy else None
        if not getattr(provider, "managed_instances_provider", None):
            return list(run_task(*args))
        fargate = [{"capacityProvider": "FARGATE", "weight": 1}]
        tasks = list(run_task(*args[:10], fargate))
        for task in tasks:
            task.capacity_provider_name = provider.name
            _echo(state, task, args[3] or {})
        return tasks

    def task_level(definition: Any) -> dict[str, Any]:
        cpu, memory = int(definition.cpu or 0), int(definition.memory or 0)
        return {"CPU": cpu, "MEMORY": memory, "PORTS": [], "PORTS_UDP": []}

    state.run_task = managed_run_task
    state._calculate_task_resource_requirements = task_level


def _echo(state: Any, task: Any, overrides: dict[str, Any]) -> None:
    definition = state.describe_task_definition(task.task_definition_arn)
    options = definition.container_definitions[0].get("logConfiguration", {}).get("options", {})
    group, prefix = options.get("awslogs-group"), options.get("awslogs-stream-prefix")
    if not group or not prefix:
        return
    command = next(iter(overrides.get("containerOverrides") or []), {}).get("command") or []
    if command[:2] == ["sh", "-c"] and command[3:4] == [MARKER]:
        ran = subprocess.run(
            [*command[:4], "echo", *command[4:]], capture_output=True, text=True, check=True
        )
        lines = (ran.stdout + ran.stderr).splitlines()
    else:
        lines = [" ".join(command)]
    put_log(group, f"{prefix}/main/{task.id}", lines)


def put_log(group: str, stream: str, lines: list[str]) -> None:
    """Write ``lines`` to a CloudWatch Logs stream as a container's awslogs driver would."""
    logs = backends.get_backend("logs")[ACCOUNT][REGION]
    if group not in logs.groups:
        logs.create_log_group(group, {})
    if stream not in logs.groups[group].streams:
        logs.create_log_stream(group, stream)
    now = int(time.time() * 1000)
    logs.put_log_events(group, stream, [{"timestamp": now, "message": m} for m in lines])


@contextlib.contextmanager
def moto_ecs() -> Iterator[Emulator]:
    """Start moto's server on a free port of 127.0.0.1; stop it on the way out."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        emulator = Emulator(f"http://{host}:{port}")
        emulator.reset()
        yield emulator
    finally:
        server.stop()


class ThrottlingProxy:
    """An HTTP proxy in front of the emulator that answers ``ThrottlingException`` (HTTP 400,
    as ECS does) to the first N calls of chosen operations (``throttle``) or to every Nth
    call (``every``), and forwards everything else.

    ``attempts`` counts the requests per operation that reached the proxy, retries included;
    ``throttled`` those it answered with the exception.
    """

    def __init__(
        self, upstream: str, throttle: dict[str, int], every: dict[str, int] | None = None
    ) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.remaining = dict(throttle)
        self.every = dict(every or {})
        self.attempts: Counter[str] = Counter()
        self.throttled: Counter[str] = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                operation = (self.headers.get("X-Amz-Target") or "").rpartition(".")[2]
                with proxy._lock:
                    proxy.attempts[operation] += 1
                    throttled = proxy.remaining.get(operation, 0) > 0
                    if throttled:
                        proxy.remaining[operation] -= 1
                    elif operation in proxy.every:
                        throttled = proxy.attempts[operation] % proxy.every[operation] == 0
                    proxy.throttled[operation] += throttled
                if throttled:
                    error = {"__type": "ThrottlingException", "message": "Rate exceeded"}
                    self._answer(400, {"Content-Type": "application/x-amz-json-1.1"}, error)
                    return
                connection = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                connection.request("POST", self.path, body, headers)
                response = connection.getresponse()
                data = response.read()
                connection.close()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, status: int, headers: dict[str, str], document: Any) -> None:
                data = json.dumps(document).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ThrottlingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
