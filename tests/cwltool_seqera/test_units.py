"""Option parsing, exit-code rules and resource translation, without running cwltool."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwltool_seqera import (
    SeqeraOptions,
    job_request,
    make_session,
    parse_options,
    process_status,
    staging_arguments,
    status_message,
)
from seqera_core.backends import JobHandle, JobState, JobStatus, LocalBackend
from seqera_core.config import Config
from seqera_core.errors import UsageError
from seqera_core.units import MIB


def test_own_options_are_taken_out_and_the_rest_passed_in_order() -> None:
    argv = [
        "--executor", "slurm", "--no-container", "--seqera-label", "team=genomics",
        "--outdir", "out", "--seqera-backend-option=history=none", "tool.cwl", "--x", "1",
    ]  # fmt: skip
    options, rest = parse_options(argv)
    assert options.executor == "slurm"
    assert options.labels == {"team": "genomics"}
    assert options.backend_options == {"history": "none"}
    assert rest == ["--no-container", "--outdir", "out", "tool.cwl", "--x", "1"]


def test_arguments_after_a_double_dash_are_never_read() -> None:
    options, rest = parse_options(["tool.cwl", "--", "--executor", "pbs"])
    assert options.executor is None  # not given: seqera config decides (default local)
    assert rest == ["tool.cwl", "--", "--executor", "pbs"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--executor", "condor"],
            "'condor': expected one of local, slurm, pbs, torque, sge, lsf, ecs",
        ),
        (["--seqera-label", "team"], "expected KEY=VALUE"),
        (["--seqera-poll-interval", "0"], "expected a number greater than 0"),
        (["--seqera-local-cpus", "many"], "expected a number greater than 0"),
    ],
)
def test_bad_options_name_the_flag_value_and_expectation(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_options(argv)


@pytest.mark.parametrize(
    ("code", "status"),
    [(0, "success"), (5, "success"), (3, "temporaryFail"), (4, "permanentFail"),
     (1, "permanentFail"), (None, "permanentFail")],
)  # fmt: skip
def test_exit_codes_follow_the_tools_lists(code: int | None, status: str) -> None:
    assert process_status(code, success=[5], temporary=[3], permanent=[4]) == status


def test_a_listed_zero_can_be_a_failure() -> None:
    assert process_status(0, permanent=[0]) == "permanentFail"


def test_scheduler_kills_are_named() -> None:
    handle = JobHandle("slurm", "7")
    assert "time limit" in (
        status_message(JobStatus(handle, JobState.FAILED, time_limit=True)) or ""
    )
    oom = JobStatus(handle, JobState.FAILED, out_of_memory=True)
    assert "out of memory" in (status_message(oom) or "")
    assert status_message(JobStatus(handle, JobState.FAILED, exit_code=1)) is None


def test_resources_are_translated_and_rounded_up() -> None:
    resources = {
        "cores": 1.5,
        "ram": 100.2,
        "tmpdirSize": 10.1,
        "outdirSize": 20,
        "cudaDeviceCount": 1,
    }
    request = job_request(resources, 90.5, "count_3")
    assert request.cpus == 1.5
    assert request.memory == 101 * MIB
    assert request.disk == 31 * MIB
    assert request.time == 91
    assert request.accelerator is not None and request.accelerator.count == 1
    assert request.labels == {"cwl/step": "count", "cwl/job": "count_3"}


def test_no_time_limit_means_none() -> None:
    assert job_request({"cores": 1, "ram": 256}, 0, "tool").time is None


def test_cluster_staging_defaults_to_the_work_directory(tmp_path: Path) -> None:
    slurm = "slurm"
    added = staging_arguments(slurm, ["tool.cwl"], tmp_path)
    assert added == [f"--tmpdir-prefix={tmp_path}/tmp/", f"--tmp-outdir-prefix={tmp_path}/out/"]
    given = staging_arguments(slurm, ["--tmpdir-prefix=/shared/t/", "tool.cwl"], tmp_path)
    assert given == [f"--tmp-outdir-prefix={tmp_path}/out/"]
    # cwltool refuses --tmp-outdir-prefix beside --cachedir: the cache holds the outputs
    cached = staging_arguments(slurm, ["--cachedir", "/shared/c", "tool.cwl"], tmp_path)
    assert cached == [f"--tmpdir-prefix={tmp_path}/tmp/"]
    assert staging_arguments("local", ["tool.cwl"], tmp_path) == []
    ecs = "ecs"
    assert staging_arguments(ecs, ["tool.cwl"], tmp_path) == ["--no-container"]
    assert staging_arguments(ecs, ["--no-container", "tool.cwl"], tmp_path) == []


def _config(backend: str) -> Config:
    return Config({"backend": backend}, {"backend": "command line"})


def test_ecs_needs_an_s3_prefix_and_the_cores_ecs_settings(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--seqera-s3-prefix s3://BUCKET/PREFIX is required"):
        make_session(SeqeraOptions(executor="ecs"), tmp_path, _config("ecs"))
    with pytest.raises(UsageError, match=r"ecs.cluster is required .*--seqera-ecs"):
        make_session(SeqeraOptions(executor="ecs", s3_prefix="s3://b/p"), tmp_path, _config("ecs"))
    with pytest.raises(UsageError, match=r"takes none .*--seqera-ecs"):
        options = SeqeraOptions(executor="ecs", backend_options={"cluster": "x"})
        make_session(options, tmp_path, _config("ecs"))


def test_ecs_settings_come_from_the_core_config_with_flags_on_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options, _ = parse_options(
        ["--executor", "ecs", "--seqera-s3-prefix", "s3://bucket/run",
         "--seqera-ecs", "execution_role=arn:aws:iam::1:role/r", "--seqera-ecs", "region=eu-west-1"]
    )  # fmt: skip
    assert options.ecs == {"execution_role": "arn:aws:iam::1:role/r", "region": "eu-west-1"}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("SEQERA_ECS_CLUSTER", "genomics")
    monkeypatch.setenv("SEQERA_ECS_REGION", "us-east-2")  # the flag wins
    backend = make_session(options, tmp_path).backend
    assert backend.name == "ecs"
    settings = backend.settings  # type: ignore[attr-defined]
    assert (settings.cluster, settings.region) == ("genomics", "eu-west-1")


def test_new_options_are_checked() -> None:
    options, _ = parse_options(["--seqera-unknown-timeout", "30", "--seqera-image", "debian"])
    assert (options.unknown_timeout, options.image) == (30, "debian")
    assert parse_options([])[0].unknown_timeout == 300
    with pytest.raises(UsageError, match=r"--seqera-s3-prefix 'bucket/x': expected s3://"):
        parse_options(["--seqera-s3-prefix", "bucket/x"])
    with pytest.raises(UsageError, match="--seqera-unknown-timeout '-1'"):
        parse_options(["--seqera-unknown-timeout", "-1"])


def test_backends_are_built_from_the_options(tmp_path: Path) -> None:
    with make_session(SeqeraOptions(executor="local", local_cpus=64), tmp_path) as session:
        local = session.backend
        assert isinstance(local, LocalBackend) and local.capacity_cpus == 64
    options = SeqeraOptions(executor="slurm", backend_options={"history": "none"})
    with make_session(options, tmp_path) as session:
        assert session.backend.name == "slurm"
    with make_session(SeqeraOptions(executor="pbs"), tmp_path) as session:
        assert session.backend.name == "pbs"
    with pytest.raises(UsageError, match="history"):
        make_session(SeqeraOptions(executor="slurm", backend_options={"history": "x"}), tmp_path)
