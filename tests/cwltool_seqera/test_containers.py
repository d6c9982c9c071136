"""Containerised CWL tools through cwltool-seqera: real Podman on the local backend, and the
node-side prelude, limits and refusals on their own."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from cwltool_seqera import parse_options
from cwltool_seqera._containers import (
    ContainerPolicy,
    container_argv,
    node_image_refusal,
    runtime_with_limits,
)

from .podman import (
    IMAGE,
    MARKER,
    Podman,
    command_shape,
    fake_singularity_env,
    podman_env,
    singularity_runs,
)
from .test_local_runs import COMMAND, run_cwl

DATA = Path(__file__).parent / "data" / "containers"


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    """Podman configured once for this module, the test image imported."""
    return podman_env(tmp_path_factory.mktemp("podman"))


def test_a_scattered_two_step_workflow_runs_each_job_in_its_container(
    podman: Podman, tmp_path: Path
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"words": ["alpha", "beta", "gamma"]}))
    before = len(podman.runs())
    done = run_cwl(["--executor", "local", str(DATA / "pipeline.cwl"), str(job)], tmp_path,
                   env=podman.env)  # fmt: skip
    assert done.code == 0, done.stderr[-4000:]
    text = Path(done.outputs["all"]["path"]).read_text().splitlines()
    # Each scattered job printed its word and the marker only the image has, and saw the
    # memory limit of its request (ramMin 96 MiB) enforced by its own cgroup.
    assert text[:3] == [f"{w} {MARKER} mem={96 * 2**20}" for w in ("alpha", "beta", "gamma")]
    assert text[3] == f"gathered in {MARKER}"
    runs = podman.runs()[before:]
    assert len(runs) == 4, runs
    shouts = [r for r in runs if "--memory=96m" in r]
    assert len(shouts) == 3 and all("--cpus=1 " in r for r in shouts), runs
    # cwltool's own command line, unchanged: mounts, --cidfile, --user, the environment.
    assert all(re.search(r"--cidfile=\S+\.cid --env=TMPDIR=/tmp --env=HOME=", r) for r in runs)
    assert all("--user=0:0" in r and "--read-only=true" in r and "--net=none" in r for r in runs)
    assert "submitted to local as" in done.stderr
    assert "Skipping Docker software container" not in done.stderr


def test_a_runtime_missing_on_this_host_is_a_clear_error_before_any_submission(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # no docker here
    done = run_cwl(["--executor", "local", str(DATA / "shout.cwl"), "--word", "x"], tmp_path,
                   env=env)  # fmt: skip
    assert done.code != 0
    assert "docker executable is not available" in done.stderr
    assert "submitted to local" not in done.stderr


def test_a_docker_file_is_refused_on_a_cluster_before_submission(tmp_path: Path) -> None:
    tool = tmp_path / "built.cwl"
    tool.write_text(
        "cwlVersion: v1.2\nclass: CommandLineTool\nrequirements:\n  DockerRequirement:\n"
        "    dockerImageId: seqera/built\n    dockerFile: 'FROM scratch'\n"
        'inputs: []\noutputs: []\nbaseCommand: ["true"]\n'
    )
    done = run_cwl(["--executor", "slurm", str(tool)], tmp_path,
                   env={**os.environ, "SLURM_CONF": str(tmp_path / "none.conf")})  # fmt: skip
    assert done.code != 0
    assert "DockerRequirement dockerFile: the slurm backend runs jobs on other nodes" in done.stderr
    assert "--seqera-pull-first" in done.stderr
    assert "submitted to slurm" not in done.stderr


def test_only_a_file_the_nodes_cannot_make_is_refused() -> None:
    cluster = ContainerPolicy.for_executor("slurm")
    assert node_image_refusal({"dockerLoad": "x.tar", "dockerImageId": "x"}, cluster)
    assert node_image_refusal({"dockerImport": "x.tar", "dockerImageId": "x"}, cluster)
    # a dockerPull fetches it on the node; pull-first or the local backend make it here
    assert node_image_refusal({"dockerFile": "FROM x", "dockerPull": "x"}, cluster) is None
    first = ContainerPolicy.for_executor("slurm", pull_first=True)
    assert node_image_refusal({"dockerLoad": "x.tar"}, first) is None
    assert (
        node_image_refusal({"dockerLoad": "x.tar"}, ContainerPolicy.for_executor("local")) is None
    )


def test_the_job_request_replaces_the_runtime_limits_and_rounds_memory_up() -> None:
    runtime = ["podman", "run", "-i", "--memory=256m", "--cpus=2", "--rm", "img:1"]
    assert runtime_with_limits(runtime, 1.5, 100 * 2**20 + 1) == [
        "podman", "run", "-i", "--rm", "--cpus=1.5", "--memory=101m", "img:1",
    ]  # fmt: skip
    # Singularity has no such flags: its command line is left alone.
    singularity = ["singularity", "--quiet", "run", "--contain", "/cache/img.sif"]
    assert runtime_with_limits(singularity, 2, 2**30) == singularity


def _prelude(
    tmp_path: Path, exe: str, image: str, pull: str | None, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    command = [exe, "run", "--rm", image, "echo", "ran"]
    argv = container_argv(command, exe=exe, image=image, pull=pull, env={"SINGULARITYENV_X": "1"})
    assert argv[:2] == ["env", "SINGULARITYENV_X=1"]
    return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_the_prelude_says_when_the_runtime_is_not_on_the_node(tmp_path: Path) -> None:
    done = _prelude(tmp_path, "seqera-no-runtime", "img:1", "img:1", {"PATH": "/usr/bin:/bin"})
    assert done.returncode == 127
    assert "the container runtime 'seqera-no-runtime' is not installed on node" in done.stderr


def test_the_prelude_pulls_a_missing_image_and_says_when_it_cannot(
    podman: Podman, tmp_path: Path
) -> None:
    missing = "localhost/seqera-cwl-test-missing:1"
    done = _prelude(tmp_path, "podman", missing, None, podman.env)
    assert done.returncode == 125
    assert f"image {missing} is not on node" in done.stderr and "no dockerPull" in done.stderr
    # No registry answers here: the pull on the node fails, and says so.
    done = _prelude(tmp_path, "podman", missing, "127.0.0.1:9/nothing:1", podman.env)
    assert done.returncode == 125, done.stderr
    assert "could not pull image 127.0.0.1:9/nothing:1 on node" in done.stderr
    # A present image goes straight to the runtime's own command line.
    done = _prelude(tmp_path, "podman", IMAGE, IMAGE, podman.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"


def test_singularity_runs_the_command_line_plain_cwltool_builds(tmp_path: Path) -> None:
    env, log = fake_singularity_env(tmp_path)
    tool = str(DATA / "greet.cwl")
    plain = subprocess.run(
        [str(Path(COMMAND).parent / "cwltool"), "--singularity", "--outdir",
         str(tmp_path / "plain"), tool, "--word", "hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    done = run_cwl(["--singularity", "--executor", "local", tool, "--word", "hi"], tmp_path,
                   env=env)  # fmt: skip
    assert done.code == 0, done.stderr[-3000:]
    assert "submitted to local" in done.stderr
    ours, theirs = singularity_runs(log)[::-1]
    assert command_shape(ours).split(" ", 1)[1] == command_shape(theirs).split(" ", 1)[1]
    # The container's environment travels as SINGULARITYENV_* (cwltool/singularity.py).
    assert "SINGULARITYENV_GREETING=hello" in ours


def test_pull_first_is_this_commands_flag_and_only_clusters_pull_on_the_node() -> None:
    options, rest = parse_options(["--executor", "slurm", "--seqera-pull-first", "--podman"])
    assert options.pull_first and rest == ["--podman"]
    assert not ContainerPolicy.for_executor("slurm").images_here
    assert ContainerPolicy.for_executor("slurm", options.pull_first).images_here
    assert ContainerPolicy.for_executor("local").images_here
