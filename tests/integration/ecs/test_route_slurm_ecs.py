"""``cwltool-seqera --executor route`` over the real one-node Slurm (``slurm`` fixture) and
the ECS emulator: with the partition saturated by a long job, the steps whose files can
travel (an image, S3 staging) go to ECS and the step that cannot waits for the cluster; a
GPU step goes to ECS because the cluster has no GPU; a job neither can run is refused
before anything is sent, naming each backend's reason.

Every job is counted once where it ran: ECS tasks by the emulator (the test plays their
container, see ``tests/integration/aws.py``), the cluster's by the line its job appends to a file
here (the ECS player cannot see this directory: it runs under an empty tmpfs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest

from tests.integration.aws import Isolated, Player, isolation_works
from tests.integration.conftest import SlurmCluster
from tests.integration.ecs.emulator import EXECUTION_ROLE as ROLE

if TYPE_CHECKING:
    from tests.integration.ecs.emulator import Emulator

pytestmark = pytest.mark.integration

BUCKET = "seqera-route"
COMMAND = str(Path(sys.executable).parent / "cwltool-seqera")
IMAGE = "DockerRequirement: {dockerPull: 'debian:bookworm-slim'}"

WORKFLOW = """
cwlVersion: v1.2
class: Workflow
requirements: {ScatterFeatureRequirement: {}}
inputs: {words: "string[]", mark: string}
outputs:
  counted: {type: "File[]", outputSource: cloud/out}
  gpu_out: {type: File, outputSource: gpu/out}
  here_out: {type: File, outputSource: here/out}
steps:
  cloud: {run: cloud.cwl, scatter: word, in: {word: words}, out: [out]}
  gpu: {run: gpu.cwl, in: {}, out: [out]}
  here: {run: here.cwl, in: {mark: mark}, out: [out]}
"""

CLOUD = f"""
cwlVersion: v1.2
class: CommandLineTool
requirements:
  {IMAGE}
  ResourceRequirement: {{coresMin: 1, ramMin: 100}}
baseCommand: [sh, -c, 'echo "$0" > word.txt']
arguments: [$(inputs.word)]
inputs: {{word: string}}
outputs: {{out: {{type: File, outputBinding: {{glob: word.txt}}}}}}
"""

GPU = f"""
cwlVersion: v1.2
class: CommandLineTool
$namespaces: {{cwltool: "http://commonwl.org/cwltool#"}}
requirements:
  {IMAGE}
  ResourceRequirement: {{coresMin: 1, ramMin: 100}}
  cwltool:CUDARequirement:
    cudaVersionMin: "11.4"
    cudaComputeCapability: "3.0"
    cudaDeviceCountMin: 1
baseCommand: [sh, -c, 'echo gpu > gpu.txt']
inputs: {{}}
outputs: {{out: {{type: File, outputBinding: {{glob: gpu.txt}}}}}}
"""

# No image: its files cannot go to ECS, so it stays on the cluster. It appends when it
# started to the mark file: one line per run.
HERE = """
cwlVersion: v1.2
class: CommandLineTool
requirements:
  ResourceRequirement: {coresMin: 1, ramMin: 100}
baseCommand: [sh, -c, 'date +%s.%N >> "$0"; echo here > here.txt']
arguments: [$(inputs.mark)]
inputs: {mark: string}
outputs: {out: {type: File, outputBinding: {glob: here.txt}}}
"""

# Wider than the cluster's node, and no image for ECS: nobody can run it.
HUGE = """
cwlVersion: v1.2
class: CommandLineTool
requirements:
  ResourceRequirement: {coresMin: 64, ramMin: 100}
baseCommand: [sh, -c, 'echo ran >> "$0"']
arguments: [$(inputs.mark)]
inputs: {mark: string}
outputs: []
"""


def _fill(slurm: SlurmCluster, tmp_path: Path) -> Path:
    """One job holding all 16 cores until the returned gate file appears (its limit says
    30 minutes, what the route reads from squeue); returned once it runs."""
    gate, ended = tmp_path / "gate", tmp_path / "fill-ended"
    wait = f"while [ ! -e {gate} ]; do sleep 0.2; done; date +%s.%N > {ended}"
    done = subprocess.run(
        ["sbatch", "--parsable", "-c", "16", "--time=30", "--mem=64M", "-J", "fill",
         "-o", "/dev/null", "--wrap", wait],
        capture_output=True, text=True, check=True, env={**os.environ, **slurm.env},
    )  # fmt: skip
    job = done.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                               text=True, check=False, env={**os.environ, **slurm.env})  # fmt: skip
        if state.stdout.strip() == "RUNNING":
            return gate
        time.sleep(0.2)
    gate.touch()
    raise AssertionError(f"the filling job {job} did not start")


def _open_when(gate: Path, player: Player, tasks: int, limit: float = 120) -> None:
    """Open the gate (end the filling job) once ECS has seen ``tasks`` tasks, or after
    ``limit`` seconds whatever happened (the test then fails on what it finds)."""

    def watch() -> None:
        deadline = time.monotonic() + limit
        while len(player.jobs) < tasks and time.monotonic() < deadline:
            time.sleep(0.1)
        gate.touch()

    threading.Thread(target=watch, daemon=True).start()


def _cwl(
    emulator: Emulator, tmp_path: Path, player: Player, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **emulator.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "SEQERA_ROUTE_BACKENDS": "slurm,ecs"}  # fmt: skip
    for name in ("SEQERA_BACKEND", "SEQERA_PLATFORM", "SEQERA_ROUTE_STAGED"):
        env.pop(name, None)
    with player:
        return subprocess.run(
            [COMMAND, "--executor", "route", "--seqera-s3-prefix", f"s3://{BUCKET}/runs",
             "--seqera-ecs", "cluster=seqera", "--seqera-ecs", f"execution_role={ROLE}",
             "--seqera-poll-interval", "0.2", "--no-container",
             "--tmpdir-prefix", f"{tmp_path}/tmp/",
             "--tmp-outdir-prefix", f"{tmp_path}/outs/", "--outdir", str(tmp_path / "out"),
             *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip


def _tasks_by_step(player: Player) -> Counter[str]:
    steps: Counter[str] = Counter()
    for task in player.jobs:
        tags = {t["key"]: t["value"] for t in task.tags}
        steps[tags["cwl/step"]] += 1
    return steps


def test_a_saturated_cluster_sends_what_can_travel_to_ecs_and_the_rest_waits(
    slurm: SlurmCluster, emulator: Emulator, tmp_path: Path
) -> None:
    isolation_works()
    emulator.hold()  # each task runs until the player ends it
    boto3.client("s3", endpoint_url=emulator.url).create_bucket(Bucket=BUCKET)
    for name, text in (("wf.cwl", WORKFLOW), ("cloud.cwl", CLOUD), ("gpu.cwl", GPU),
                       ("here.cwl", HERE)):  # fmt: skip
        (tmp_path / name).write_text(text)
    mark = tmp_path / "here-ran"
    (tmp_path / "job.json").write_text(json.dumps({"words": ["a", "b", "c"], "mark": str(mark)}))
    gate = _fill(slurm, tmp_path)
    container = Isolated(tmp_path)
    player = Player(emulator, container)
    # the cluster stays full until the four jobs that can travel have reached ECS
    _open_when(gate, player, tasks=4)
    done = _cwl(emulator, tmp_path, player, "--enable-ext",  # cwltool:CUDARequirement
                str(tmp_path / "wf.cwl"), str(tmp_path / "job.json"))  # fmt: skip
    ran = "\n".join(r.stderr for r in container.results)
    assert done.returncode == 0, done.stderr[-6000:] + ran
    outputs = json.loads(done.stdout)
    words = [Path(f["path"]).read_text() for f in outputs["counted"]]
    assert words == ["a\n", "b\n", "c\n"]
    assert Path(outputs["gpu_out"]["path"]).read_text() == "gpu\n"
    assert Path(outputs["here_out"]["path"]).read_text() == "here\n"

    # ECS ran the three scattered jobs and the GPU job, each once; nothing else
    assert _tasks_by_step(player) == Counter(cloud=3, gpu=1)
    assert all(r.returncode == 0 for r in container.results)
    (gpu,) = [t for t in player.jobs if {"key": "cwl/step", "value": "gpu"} in t.tags]
    definition = emulator.ecs_state.describe_task_definition(gpu.task_definition_arn)
    assert definition.container_definitions[0]["resourceRequirements"] == [
        {"type": "GPU", "value": "1"}
    ]
    # the step without an image ran on the cluster, once, after the filling job ended
    (started,) = mark.read_text().split()
    assert float(started) >= float((tmp_path / "fill-ended").read_text())

    log = done.stderr
    for line in log.splitlines():
        if "submitted to" not in line:
            continue
        if "[job here]" in line:
            assert "submitted to slurm" in line, line
            assert "ecs cannot: no shared file system, and the engine does not stage" in line
        elif "[job gpu]" in line:
            assert "submitted to ecs" in line and "slurm cannot: 1 GPUs asked, it has none" in line
        else:  # a scattered job: the cluster is full for its 30 minutes, ECS ends it sooner
            assert "submitted to ecs" in line and "(finish: ecs finish in" in line, line
            assert "slurm " in line.split("(finish: ecs", 1)[1], line
    assert log.count("submitted to ") == 5
    # every staged job's objects are gone once its outputs are home
    listed = boto3.client("s3", endpoint_url=emulator.url).list_objects_v2(Bucket=BUCKET)
    assert not listed.get("Contents")


def test_a_job_no_backend_can_run_is_refused_before_anything_is_sent(
    slurm: SlurmCluster, emulator: Emulator, tmp_path: Path
) -> None:
    boto3.client("s3", endpoint_url=emulator.url).create_bucket(Bucket=BUCKET)
    (tmp_path / "huge.cwl").write_text(HUGE)
    mark = tmp_path / "huge-ran"
    (tmp_path / "job.json").write_text(json.dumps({"mark": str(mark)}))
    player = Player(emulator, lambda command: 0)  # a task that appeared would "succeed"
    done = _cwl(emulator, tmp_path, player, str(tmp_path / "huge.cwl"),
                str(tmp_path / "job.json"))  # fmt: skip
    assert done.returncode != 0
    assert (
        "no backend can run it: slurm: 64 cores asked, its largest node has 16; "
        "ecs: no shared file system, and the engine does not stage this job's files" in done.stderr
    )
    assert "submitted to" not in done.stderr
    assert player.jobs == [] and not mark.exists()
    queued = subprocess.run(["squeue", "-h", "-n", "huge", "-o", "%i"], capture_output=True,
                            text=True, check=True, env={**os.environ, **slurm.env})  # fmt: skip
    assert queued.stdout.strip() == ""
