"""The ECS backend against the moto[server] emulator, over HTTP (see emulator.py for its gaps)."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import attrs
import boto3
import botocore.exceptions
import pytest

from seqera_core.backends import JobSpec, JobState, SubmitError
from seqera_core.backends.awslogs import wrapped
from seqera_core.backends.ecs._backend import EcsBackend, EcsSettings
from seqera_core.errors import ResourceError, UsageError
from seqera_core.history import open_history
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.outcomes import finished_record
from seqera_core.resolvers import PredictiveResolver
from seqera_core.units import GIB
from tests.integration.aws import IMAGE, job, polled, sent
from tests.integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration


def settings(**overrides: Any) -> EcsSettings:
    return EcsSettings(**{"cluster": "seqera", "execution_role": ROLE, **overrides})


def test_registration_is_reused_by_a_second_backend(emulator: Emulator) -> None:
    first = EcsBackend(settings())
    small = {"cpus": 1, "memory": 2 * GIB}
    big = {"cpus": 4, "memory": 16 * GIB, "accelerator": Accelerator(1)}
    first.submit([job("a", **small), job("b", **small), job("c", **big)])
    assert first.calls["RegisterTaskDefinition"] == 2

    second = EcsBackend(settings())  # a second run: nothing cached in memory
    second.submit([job("d", **big), job("e", **small)])
    assert second.calls["RegisterTaskDefinition"] == 0
    assert second.calls["ListTaskDefinitions"] == 1
    assert second.calls["DescribeTaskDefinition"] == 2  # newest first: big, then small

    ecs = boto3.client("ecs")
    family = "seqera-public-ecr-aws-docker-library-ubuntu-24-04"
    assert len(ecs.list_task_definitions(familyPrefix=family)["taskDefinitionArns"]) == 2
    # something that changes the definition (another role) is a new revision
    third = EcsBackend(settings(execution_role=ROLE + "2"))
    third.submit([job("f", **small)])
    assert third.calls["RegisterTaskDefinition"] == 1


def test_task_definition_contents(emulator: Emulator) -> None:
    backend = EcsBackend(settings(task_role=ROLE + "-task", logs_group="/seqera/test"))
    request = {"cpus": 1.5, "memory": 3 * GIB + 1, "accelerator": Accelerator(2, "a10g")}
    (handle,) = backend.submit([job("g", **request)])
    ecs = boto3.client("ecs")
    arn = ecs.describe_tasks(cluster="seqera", tasks=[handle.native_id])["tasks"][0][
        "taskDefinitionArn"
    ]
    found = ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
    definition = found["taskDefinition"]
    assert definition["requiresCompatibilities"] == ["MANAGED_INSTANCES"]
    assert definition["networkMode"] == "awsvpc"
    assert (definition["cpu"], definition["memory"]) == ("1536", "3073")  # rounded up
    assert definition["executionRoleArn"] == ROLE
    assert definition["taskRoleArn"] == ROLE + "-task"
    (container,) = definition["containerDefinitions"]
    assert container["name"] == "main" and container["image"] == IMAGE
    assert container["resourceRequirements"] == [{"type": "GPU", "value": "2"}]
    assert container["logConfiguration"] == {
        "logDriver": "awslogs",
        "options": {
            "awslogs-group": "/seqera/test",
            "awslogs-region": "us-east-1",
            "awslogs-stream-prefix": "seqera",
        },
    }
    assert [t["key"] for t in found["tags"]] == ["seqera:definition-hash"]


def test_run_task_payload(emulator: Emulator) -> None:
    ec2 = boto3.client("ec2")
    # the emulator creates an ENI in the first subnet, so it must exist there
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    backend = EcsBackend(
        settings(subnets=[subnet], security_groups=["sg-1"], assign_public_ip=False)
    )
    bodies = sent(backend.ecs, "RunTask")
    spec = JobSpec(
        "align",
        ("bwa", "mem", "ref.fa", "reads; rm -rf /"),
        ResourceRequest(container=IMAGE, machine_type="m7i.2xlarge", labels={"team": "gen"}),
        env={"SAMPLE": "s1"},
        labels={"run": "r1"},
    )
    (handle,) = backend.submit([spec])
    (body,) = bodies
    assert body["cluster"] == "seqera" and body["count"] == 1
    assert body["capacityProviderStrategy"] == [{"capacityProvider": "seqera-managed", "weight": 1}]
    assert body["networkConfiguration"] == {
        "awsvpcConfiguration": {
            "subnets": [subnet],
            "securityGroups": ["sg-1"],
            "assignPublicIp": "DISABLED",
        }
    }
    (override,) = body["overrides"]["containerOverrides"]
    assert override["name"] == "main"
    # argv, no shell of ours around it: the usage wrapper passes it on as "$@"
    assert override["command"] == wrapped(["bwa", "mem", "ref.fa", "reads; rm -rf /"])
    assert {e["name"]: e["value"] for e in override["environment"]} == {
        "SAMPLE": "s1",
        "SEQERA_LABEL_RUN": "r1",
        "SEQERA_LABEL_TEAM": "gen",
    }
    key = body["clientToken"]
    assert body["tags"] == [
        {"key": "run", "value": "r1"},
        {"key": "team", "value": "gen"},
        {"key": "seqera-submission", "value": key},
    ]
    assert body["placementConstraints"] == [
        {"type": "memberOf", "expression": "attribute:ecs.instance-type == m7i.2xlarge"}
    ]
    # and the emulator recorded the same task
    ecs = boto3.client("ecs")
    task = ecs.describe_tasks(cluster="seqera", tasks=[handle.native_id], include=["TAGS"])
    (described,) = task["tasks"]
    assert described["capacityProviderName"] == "seqera-managed"
    assert described["overrides"]["containerOverrides"][0]["command"][4] == "bwa"
    assert described["tags"] == body["tags"]


def test_tags_are_sanitised(emulator: Emulator) -> None:
    backend = EcsBackend(settings())
    labels = {"aws:owner": "me", "nextflow/run-name": "happy#turing", "k": "v" * 300, "": "x"}
    (handle,) = backend.submit([job("t", labels=labels)])
    ecs = boto3.client("ecs")
    (task,) = ecs.describe_tasks(cluster="seqera", tasks=[handle.native_id], include=["TAGS"])[
        "tasks"
    ]
    tags = {t["key"]: t["value"] for t in task["tags"]}
    assert tags.pop("seqera-submission").startswith("seqera-")
    assert tags == {"_aws:owner": "me", "k": "v" * 256, "nextflow/run-name": "happy_turing"}


def test_250_tasks_take_three_describe_calls_per_poll(emulator: Emulator) -> None:
    backend = EcsBackend(settings())
    handles = backend.submit([job(f"j{i}", cpus=1 + i % 2) for i in range(250)])
    assert backend.calls["RunTask"] == 250
    assert backend.calls["RegisterTaskDefinition"] == 2
    cycles = 0
    statuses = backend.poll(handles)
    assert backend.calls["DescribeTasks"] == 3
    while not all(s.state.finished for s in statuses):
        before = backend.calls["DescribeTasks"]
        active = sum(not s.state.finished for s in statuses)
        statuses = backend.poll(handles)
        assert backend.calls["DescribeTasks"] - before == math.ceil(active / 100)
        cycles += 1
        assert cycles < 10
    assert {s.state for s in statuses} == {JobState.SUCCEEDED}
    assert {s.exit_code for s in statuses} == {0}
    before = backend.calls["DescribeTasks"]
    backend.poll(handles)  # finished tasks are remembered, not described again
    assert backend.calls["DescribeTasks"] == before


def test_exit_codes(emulator: Emulator) -> None:
    backend = EcsBackend(settings())
    handles = backend.submit([job(f"e{i}") for i in range(4)])
    emulator.stop(handles[0].native_id, exit_code=0)
    emulator.stop(handles[1].native_id, exit_code=3, reason="Essential container in task exited")
    emulator.stop(handles[2].native_id, exit_code=None, reason="Essential container in task exited")
    emulator.stop(
        handles[3].native_id,
        exit_code=137,
        container_reason="OutOfMemoryError: Container killed due to memory usage",
    )
    ok, failed, no_code, oom = backend.poll(handles)
    assert (ok.state, ok.exit_code) == (JobState.SUCCEEDED, 0)
    assert (failed.state, failed.exit_code) == (JobState.FAILED, 3)
    assert (no_code.state, no_code.exit_code) == (JobState.FAILED, None)
    assert no_code.reason == "Essential container in task exited"
    assert (oom.state, oom.exit_code, oom.out_of_memory) == (JobState.FAILED, 137, True)


def test_spot_interruption_is_retried_then_given_up(
    emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    backend = EcsBackend(settings(max_spot_attempts=3))
    bodies = sent(backend.ecs, "RunTask")
    (handle,) = backend.submit([job("spot")])
    arns = [handle.native_id]
    for attempt in (2, 3):
        emulator.stop(
            arns[-1],
            exit_code=None,
            stop_code="SpotInterruption",
            reason="Your Spot Task was interrupted.",
        )
        (status,) = backend.poll([handle])
        assert status.state is JobState.PENDING
        assert f"attempt {attempt} of 3" in (status.reason or "")
        assert status.handle == handle  # the caller's handle survives restarts
        arns.append(backend._tasks[handle.native_id].arn)
    assert len(set(arns)) == 3 and backend.calls["RunTask"] == 3
    # the same task again, under a submission key of its own (clientToken = startedBy)
    tokens = [body.pop("clientToken") for body in bodies]
    assert [body.pop("startedBy") for body in bodies] == tokens
    assert tokens[1:] == [f"{tokens[0]}-r1", f"{tokens[0]}-r2"]
    assert bodies[1] == bodies[0] and bodies[2] == bodies[0]
    assert sum("was interrupted" in r.getMessage() for r in caplog.records) == 2
    emulator.stop(
        arns[-1], exit_code=None, stop_code=None, reason="Host EC2 (instance i-0abc) terminated."
    )
    (status,) = backend.poll([handle])
    assert status.state is JobState.FAILED
    assert "gave up after 3 spot interruptions" in (status.reason or "")
    assert backend.calls["RunTask"] == 3


def test_spot_interruption_then_success(emulator: Emulator) -> None:
    backend = EcsBackend(settings())
    (handle,) = backend.submit([job("spot")])
    emulator.stop(handle.native_id, exit_code=None, stop_code="SpotInterruption")
    assert backend.poll([handle])[0].state is JobState.PENDING
    (status,) = polled(backend, [handle])
    assert (status.state, status.exit_code) == (JobState.SUCCEEDED, 0)
    assert status.resubmissions == 1  # the backend's own restart, not an engine attempt


def test_a_restart_throttled_past_its_retries_is_tried_again(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 20: a throttling burst at the moment of a spot restart failed the job, which
    # spent one of the engine's attempts on AWS's rate limit.
    with emulator.throttling({}) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        backend = EcsBackend(settings(), max_attempts=2)
        (handle,) = backend.submit([job("spot")])
        emulator.stop(handle.native_id, exit_code=None, stop_code="SpotInterruption")
        proxy.remaining |= {"RunTask": 2, "ListTasks": 2}  # the restart's tries, the lookup's
        (status,) = backend.poll([handle])
        assert status.state is JobState.PENDING and "ThrottlingException" in (status.reason or "")
        (status,) = backend.poll([handle])  # the same key again, now through
        assert status.state is JobState.PENDING and status.resubmissions == 1
        assert proxy.attempts["RunTask"] == 4  # the first start, two throttled, the restart
        (status,) = polled(backend, [handle])
    assert (status.state, status.resubmissions) == (JobState.SUCCEEDED, 1)
    assert len(emulator.ecs_state.tasks["seqera"]) == 2  # the reclaimed task and one restart


def test_missing_cluster(emulator: Emulator) -> None:
    backend = EcsBackend(settings(cluster="nowhere"))
    with pytest.raises(
        UsageError, match="ECS cluster 'nowhere' does not exist in region us-east-1"
    ):
        backend.submit([job()])
    assert backend.calls["RunTask"] == 0


def test_cluster_without_managed_instances_provider(emulator: Emulator) -> None:
    emulator.create_cluster("asg-only", provider="asg-provider", managed=False)
    backend = EcsBackend(settings(cluster="asg-only"))
    with pytest.raises(UsageError, match="has no active ECS Managed Instances capacity provider"):
        backend.submit([job()])
    named = EcsBackend(settings(capacity_provider="asg-provider"))
    with pytest.raises(UsageError, match="'asg-provider' is not an active ECS Managed"):
        named.submit([job()])
    boto3.client("ecs").delete_cluster(cluster="seqera")
    with pytest.raises(UsageError, match="is INACTIVE, not ACTIVE"):
        EcsBackend(settings()).submit([job()])


def test_network_is_discovered_from_the_default_vpc(emulator: Emulator) -> None:
    ec2 = boto3.client("ec2")
    (vpc,) = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])
    defaults = {s["SubnetId"] for s in subnets["Subnets"] if s["DefaultForAz"]}
    # a non-default subnet in the same VPC is never picked
    ec2.create_subnet(VpcId=vpc["VpcId"], CidrBlock="172.31.240.0/24")
    groups = ec2.describe_security_groups(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc["VpcId"]]},
            {"Name": "group-name", "Values": ["default"]},
        ]
    )["SecurityGroups"]
    backend = EcsBackend(settings())
    bodies = sent(backend.ecs, "RunTask")
    backend.submit([job()])
    network = bodies[0]["networkConfiguration"]["awsvpcConfiguration"]
    assert set(network["subnets"]) == defaults and len(defaults) > 1
    assert network["securityGroups"] == [groups[0]["GroupId"]]
    assert network["assignPublicIp"] == "ENABLED"


def test_storage_beyond_the_capacity_provider_is_refused(emulator: Emulator) -> None:
    backend = EcsBackend(settings())
    with pytest.raises(
        ResourceError, match="at most 200 GiB, the data volume of capacity provider"
    ):
        backend.submit([job("ok", disk=100 * GIB), job("big", disk=300 * GIB)])
    assert backend.calls["RunTask"] == 0  # nothing starts when one job cannot


def test_time_limit_stops_the_task(emulator: Emulator) -> None:
    emulator.transitions(times=1000)  # stays RUNNING until stopped
    backend = EcsBackend(settings())
    (handle,) = backend.submit([job("slow", time=1)])
    assert backend.poll([handle])[0].state is JobState.RUNNING
    time.sleep(1.1)
    assert backend.poll([handle])[0].state is JobState.RUNNING  # StopTask sent
    assert backend.calls["StopTask"] == 1
    (status,) = backend.poll([handle])
    assert status.state is JobState.FAILED and status.time_limit
    assert emulator.task(handle.native_id).stopped_reason.endswith("time limit of 1 s exceeded")


def test_cancel_stops_the_task(emulator: Emulator) -> None:
    emulator.transitions(times=1000)
    backend = EcsBackend(settings())
    handles = backend.submit([job("a"), job("b")])
    backend.cancel(handles[:1])
    assert backend.calls["StopTask"] == 1
    cancelled, running = backend.poll(handles)
    assert cancelled.state is JobState.CANCELLED
    assert running.state is JobState.RUNNING


def test_logs_from_cloudwatch(emulator: Emulator) -> None:
    backend = EcsBackend(settings())
    (handle,) = backend.submit([job("hello", "echo", "hello", "world")])
    # the emulated container wrote its command line to seqera/main/<task id>
    assert backend.logs(handle) == "echo hello world\n"
    task_id = handle.native_id.rsplit("/", 1)[1]
    boto3.client("logs").put_log_events(
        logGroupName="/aws/ecs/seqera",
        logStreamName=f"seqera/main/{task_id}",
        logEvents=[{"timestamp": int(time.time() * 1000), "message": "done"}],
    )
    assert backend.logs(handle) == "echo hello world\ndone\n"
    other = EcsBackend(settings(logs_group="/not/there"))
    assert other.logs(handle) == ""  # no stream yet: nothing to show


def test_throttling_is_retried_with_backoff(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    with emulator.throttling({"RunTask": 2, "DescribeTasks": 1}) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        backend = EcsBackend(settings())
        (handle,) = backend.submit([job()])
        backend.poll([handle])
        assert proxy.attempts["RunTask"] == 3  # two throttled, then through
        assert proxy.attempts["DescribeTasks"] == 2
        assert backend.calls["RunTask"] == 1  # one API call, retried inside botocore

    with emulator.throttling({"RunTask": 10}) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        backend = EcsBackend(settings(), max_attempts=3)
        with pytest.raises(SubmitError, match="ThrottlingException"):
            backend.submit([job()])
        assert proxy.attempts["RunTask"] == 3


def test_security_group_follows_the_configured_subnets_vpc(emulator: Emulator) -> None:
    ec2 = boto3.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    filters = [{"Name": "vpc-id", "Values": [vpc]}, {"Name": "group-name", "Values": ["default"]}]
    (group,) = ec2.describe_security_groups(Filters=filters)["SecurityGroups"]
    backend = EcsBackend(settings(subnets=[subnet]))
    backend.check()
    assert (backend.subnets, backend.security_groups) == ((subnet,), (group["GroupId"],))
    assert backend.calls["DescribeVpcs"] == 0


def test_a_finished_task_reports_its_wall_time_and_peak_memory(emulator: Emulator) -> None:
    """The usage wrapper's line (the emulator runs the real wrapper) becomes the peak."""
    backend = EcsBackend(settings())
    handles = backend.submit([job(f"u{i}", memory=GIB) for i in range(150)])
    statuses = polled(backend, handles)
    assert {s.state for s in statuses} == {JobState.SUCCEEDED}
    # the emulated container's cgroup is this machine's: only its presence is known
    assert all(s.peak_memory_bytes and s.peak_memory_bytes > 0 for s in statuses)
    assert all(s.wall_seconds is not None and s.wall_seconds >= 0 for s in statuses)
    # every task stopped in the same poll: 150 streams in two FilterLogEvents
    assert backend.calls["FilterLogEvents"] == 2
    assert backend.logs(handles[0]) == "echo u0\n"  # the usage line is not the job's output


def test_a_missing_usage_line_is_waited_for_then_given_up(emulator: Emulator) -> None:
    backend = EcsBackend(settings(usage_wait=0.5))
    (handle,) = backend.submit([job("quiet")])
    boto3.client("logs").delete_log_stream(
        logGroupName="/aws/ecs/seqera",
        logStreamName=f"seqera/main/{handle.native_id.rsplit('/', 1)[1]}",
    )
    states = [backend.poll([handle])[0] for _ in range(5)]  # RUNNING ... STOPPED
    assert (
        states[-1].state is JobState.RUNNING and states[-1].reason == "stopped; reading its usage"
    )
    time.sleep(0.6)
    (status,) = backend.poll([handle])
    assert status.state is JobState.SUCCEEDED and status.peak_memory_bytes is None
    assert status.wall_seconds is not None


def test_usage_off_sends_the_bare_command(emulator: Emulator) -> None:
    backend = EcsBackend(settings(report_usage=False))
    bodies = sent(backend.ecs, "RunTask")
    (handle,) = backend.submit([job("bare", "echo", "bare")])
    assert bodies[0]["overrides"]["containerOverrides"][0]["command"] == ["echo", "bare"]
    (status,) = polled(backend, [handle])
    assert status.state is JobState.SUCCEEDED and status.peak_memory_bytes is None
    assert backend.calls["FilterLogEvents"] == 0


def test_the_right_sizer_learns_from_finished_tasks(emulator: Emulator) -> None:
    """ECS as a history source: a second task of the process asks for less than declared."""
    backend = EcsBackend(settings())
    declared = ResourceRequest(container=IMAGE, memory=64 * GIB, process="ALIGN", time=3600)
    specs = [JobSpec(f"a{i}", ("echo", str(i)), declared) for i in range(3)]
    handles = backend.submit(specs)
    statuses = polled(backend, handles)
    history = open_history(":memory:")
    history.record(
        finished_record(declared, status, run_id="r1", engine="seqera") for status in statuses
    )
    peak = max(s.peak_memory_bytes or 0 for s in statuses)
    answer = PredictiveResolver(history).resolve(attrs.evolve(declared, attempt=1))
    assert answer is not None and answer.memory == math.ceil(peak * 1.2) < declared.memory


def test_a_run_task_whose_answer_is_lost_starts_one_task(emulator: Emulator) -> None:
    # Issue 20: ECS started the task but the answer never came back (a timeout). The backend
    # asks for its submission key (startedBy) before calling the submission failed.
    backend = EcsBackend(settings())
    bodies = sent(backend.ecs, "RunTask")
    real = backend.ecs.run_task

    def lost_answer(**params: Any) -> Any:
        real(**params)
        raise botocore.exceptions.ReadTimeoutError(endpoint_url="http://127.0.0.1")

    backend.ecs.run_task = lost_answer  # type: ignore[method-assign]
    (handle,) = backend.submit([job("once")])
    ecs = boto3.client("ecs")
    arns = ecs.list_tasks(cluster="seqera", desiredStatus="RUNNING")["taskArns"]
    arns += ecs.list_tasks(cluster="seqera", desiredStatus="STOPPED")["taskArns"]
    assert arns == [handle.native_id]  # one task, and it is the one the handle names
    key = bodies[0]["clientToken"]
    assert key.startswith("seqera-") and bodies[0]["startedBy"] == key
    tags = ecs.describe_tasks(cluster="seqera", tasks=arns, include=["TAGS"])["tasks"][0]["tags"]
    assert {"key": "seqera-submission", "value": key} in tags


def test_a_new_backend_finds_tasks_by_the_callers_keys(emulator: Emulator) -> None:
    # A restarted sidecar lost the handles: ListTasks by the startedBy each key becomes
    # finds the task, running or stopped; a key never sent is not found.
    backend = EcsBackend(settings())
    specs = [attrs.evolve(job(f"k{i}"), key=f"caller-key-{i}-{'x' * 40}") for i in range(2)]
    handles = backend.submit(specs)
    backend.cancel(handles[1:])  # one stopped, one running
    polled(backend, handles[1:])
    again = EcsBackend(settings())
    found = again.find([s.key or "" for s in specs] + ["never-sent"])
    assert {k: h.native_id for k, h in found.items()} == {
        specs[0].key: handles[0].native_id, specs[1].key: handles[1].native_id}  # fmt: skip
    assert again.calls["ListTasks"] == 1 + 2 + 2  # running first, then stopped: 1, 2 and 2
    # adopted: polled like a task of its own (the emulator keeps no stop reason to read)
    assert again.poll([found[specs[1].key or ""]])[0].state.finished
