"""What snakemake-executor-plugin-slurm's users write, through the Slurm backend on the
real cluster of the ``slurm`` fixture (and ``slurm_accounting`` where slurmdbd must
answer: qos, clusters, accounts): multi-task and two-node jobs, gres, reservations, the
signal before the time limit, --tmp only where a node declares TmpDisk, and each refused
job's own sbatch error."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqera_core.backends import JobSpec, JobState, SubmitError
from seqera_core.backends.batch.slurm import SlurmBackend
from seqera_core.dialects.snakemake import request_from_resources
from seqera_core.models import ResourceRequest
from seqera_core.units import MIB

from .conftest import SlurmCluster, wait

pytestmark = pytest.mark.integration


def _backend(
    tmp_path: Path, cluster: SlurmCluster, **site: object
) -> tuple[SlurmBackend, list[str]]:
    notes: list[str] = []
    made = SlurmBackend(work_dir=tmp_path / "jobs", env=cluster.env, warn=notes.append, **site)
    return made, notes


def _scontrol(cluster: SlurmCluster, *args: str) -> str:
    done = subprocess.run(["scontrol", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **cluster.env})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _out(status_stdout: str | None) -> str:
    return Path(str(status_stdout)).read_text()


# single quotes: each rank's own shell expands its SLURM_PROCID, not the batch script's
RANKS = (
    "srun bash -c 'echo rank=$SLURM_PROCID node=$SLURMD_NODENAME'; scontrol show job $SLURM_JOB_ID"
)


def test_a_snakemake_mpi_rule_runs_its_ranks_with_cpus_and_memory_per_task(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    backend, _ = _backend(tmp_path, slurm)
    resources = {"mpi": "srun", "tasks": 2, "cpus_per_task": 2, "mem_mb_per_cpu": 100,
                 "runtime": 5, "gres": "tmpspace:1G"}  # fmt: skip
    request = request_from_resources(resources, threads=1, rule="mpi").request
    [handle] = backend.submit([JobSpec("mpi", ["bash", "-c", RANKS], request)])
    [status] = wait(backend, [handle])
    text = _out(handle.stdout)
    assert status.state is JobState.SUCCEEDED, (status, text)
    assert sorted(line for line in text.splitlines() if line.startswith("rank=")) == [
        "rank=0 node=localhost",
        "rank=1 node=localhost",
    ]
    # 100 MB per CPU is 96 MiB, rounded up to 96M (Slurm's M are MiB)
    for field in ("NumTasks=2", "CPUs/Task=2", "MinMemoryCPU=96M", "TresPerNode=gres:tmpspace:1G"):
        assert field in text, text


def test_a_two_node_job_runs_one_rank_on_each_node(
    slurm_pair: SlurmCluster, tmp_path: Path
) -> None:
    # Debian's slurmd is built with multiple-slurmd: nodes n1 and n2 are two slurmd here
    backend, _ = _backend(tmp_path, slurm_pair)
    request = ResourceRequest(cpus=1, memory=100 * MIB, time=300, nodes=2, tasks=2, mpi="srun")
    [handle] = backend.submit([JobSpec("two", ["bash", "-c", RANKS], request)])
    [status] = wait(backend, [handle])
    text = _out(handle.stdout)
    assert status.state is JobState.SUCCEEDED, (status, text)
    ranks = sorted(line for line in text.splitlines() if line.startswith("rank="))
    assert ranks == ["rank=0 node=n1", "rank=1 node=n2"], text
    assert "NumNodes=2" in text


def test_disk_goes_as_tmp_only_where_a_node_declares_that_much(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    # Snakemake's default disk_mb (1000 MB) on a node without TmpDisk (Slurm's default)
    request = ResourceRequest(cpus=1, memory=100 * MIB, disk=1000 * 10**6, time=60)
    backend, notes = _backend(tmp_path, slurm)
    handles = backend.submit([JobSpec(f"d{n}", ["true"], request) for n in range(2)])
    assert {s.state for s in wait(backend, handles)} == {JobState.SUCCEEDED}
    assert len(notes) == 1 and "no node of the default partition declares 954 MiB" in notes[0]
    # asked for explicitly, Slurm's own refusal is what the user sees
    always, _ = _backend(tmp_path / "always", slurm, tmp="always")
    with pytest.raises(SubmitError, match="Temporary disk specification can not be satisfied"):
        always.submit([JobSpec("d", ["true"], request)])


def test_two_refused_jobs_of_one_batch_each_show_their_own_error(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    backend, _ = _backend(tmp_path, slurm)
    specs = [
        JobSpec("ok", ["true"], ResourceRequest(cpus=1, memory=100 * MIB, time=60)),
        JobSpec("badpart", ["true"], ResourceRequest(cpus=1, queue="nosuchpartition")),
        JobSpec("badgres", ["true"], ResourceRequest(cpus=1, extra={"slurm.gres": "nosuch:1"})),
    ]
    with pytest.raises(SubmitError) as raised:
        backend.submit(specs)
    error = raised.value
    assert error.positions == (0,)
    assert "badpart" in error.error_of(1) and "invalid partition" in error.error_of(1).lower()
    assert "badgres" in error.error_of(2) and "gres" in error.error_of(2).lower()
    assert "partition" not in error.error_of(2).lower()
    assert [s.state for s in wait(backend, list(error.submitted))] == [JobState.SUCCEEDED]


@pytest.fixture
def reservation(slurm: SlurmCluster) -> Iterator[str]:
    """One core of the node reserved for root for ten minutes; deleted after."""
    name = f"seqera{os.getpid()}"
    _scontrol(slurm, "create", "reservation", f"ReservationName={name}", "StartTime=now",
              "Duration=10", "Users=root", "CoreCnt=1", "Nodes=localhost")  # fmt: skip
    try:
        yield name
    finally:
        _scontrol(slurm, "delete", f"ReservationName={name}")


def test_a_job_runs_in_the_reservation_it_names(
    slurm: SlurmCluster, tmp_path: Path, reservation: str
) -> None:
    backend, _ = _backend(tmp_path, slurm, reservation=reservation)
    command = ["bash", "-c", "scontrol show job $SLURM_JOB_ID"]
    [handle] = backend.submit([JobSpec("r", command, ResourceRequest(cpus=1, time=60))])
    [status] = wait(backend, [handle])
    assert status.state is JobState.SUCCEEDED
    assert f"Reservation={reservation}" in _out(handle.stdout)
    # a reservation that does not exist is refused before the job could run anywhere else
    other, _ = _backend(tmp_path / "other", slurm, reservation="nosuchreservation")
    with pytest.raises(SubmitError, match=r"(?i)reservation"):
        other.submit([JobSpec("r", ["true"], ResourceRequest(cpus=1, time=60))])


TRAPPED = "trap 'echo got USR2 >> saved; exit 0' USR2; for i in $(seq 240); do sleep 0.5; done"


def test_the_job_hears_a_signal_before_its_time_limit(slurm: SlurmCluster, tmp_path: Path) -> None:
    # B:USR2@55 with a one-minute limit: the batch shell gets SIGUSR2 after about 5 s
    # (slurmctld looks at time limits on a timer, up to its PeriodicTimeout of 30 s later)
    backend, _ = _backend(tmp_path, slurm, signal="B:USR2@55")
    spec = JobSpec("sig", ["bash", "-c", TRAPPED], ResourceRequest(cpus=1, time=60),
                   workdir=str(tmp_path))  # fmt: skip
    [handle] = backend.submit([spec])
    [status] = wait(backend, [handle], limit=90)
    assert status.state is JobState.SUCCEEDED, status
    assert (tmp_path / "saved").read_text() == "got USR2\n"


def test_qos_clusters_and_account_where_slurmdbd_answers(
    slurm_accounting: SlurmCluster, tmp_path: Path
) -> None:
    env = {**os.environ, **slurm_accounting.env}
    for argv in (["sacctmgr", "-i", "add", "qos", "fast"],
                 ["sacctmgr", "-i", "add", "account", "genomics"],
                 ["sacctmgr", "-i", "add", "user", "root", "account=genomics"]):  # fmt: skip
        subprocess.run(argv, env=env, capture_output=True, check=False)
    backend, notes = _backend(tmp_path, slurm_accounting, qos="fast")
    command = ["bash", "-c", "scontrol show job $SLURM_JOB_ID"]
    request = ResourceRequest(cpus=1, time=60, extra={"slurm.clusters": "localcluster"})
    [handle] = backend.submit([JobSpec("q", command, request)])
    [status] = wait(backend, [handle])  # squeue and sacct asked with -M localcluster
    assert status.state is JobState.SUCCEEDED, status
    text = _out(handle.stdout)
    assert "QOS=fast" in text and "Account=root" in text, text
    assert any("account root chosen" in note for note in notes), notes
    # a given account is checked against sacctmgr's list before anything is sent
    with pytest.raises(Exception, match="slurm_account 'nosuch' is not one of"):
        backend.submit([JobSpec("a", ["true"], ResourceRequest(cpus=1, account="nosuch"))])


MPI_TOOL = """\
cwlVersion: v1.2
class: CommandLineTool
$namespaces: {cwltool: "http://commonwl.org/cwltool#"}
requirements:
  cwltool:MPIRequirement: {processes: 2}
  ResourceRequirement: {coresMin: 1, ramMin: 100}
baseCommand: [bash, -c, 'echo rank=$SLURM_PROCID']
stdout: ranks.txt
inputs: []
outputs:
  ranks: {type: stdout}
"""


def test_a_cwl_mpi_requirement_runs_its_processes_as_slurm_tasks(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    # cwltool prepends its MPI runner (here srun -n 2, --mpi-config-file) to the command;
    # cwltool hands the tool a clean environment: srun finds the cluster by SLURM_CONF
    (tmp_path / "mpi.cwl").write_text(MPI_TOOL)
    (tmp_path / "mpi.yml").write_text("runner: srun\nnproc_flag: -n\nenv_pass: [SLURM_CONF]\n")
    command = str(Path(sys.executable).parent / "cwltool-seqera")
    done = subprocess.run(
        [command, "--executor", "slurm", "--no-container", "--enable-ext",
         "--mpi-config-file", "mpi.yml", "--outdir", "out", "mpi.cwl"],
        cwd=tmp_path, env={**os.environ, **slurm.env}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = sorted((tmp_path / "out" / "ranks.txt").read_text().split())
    assert ranks == ["rank=0", "rank=1"]


def test_a_platform_generated_from_the_cluster_validates_and_chooses_queues(
    slurm: SlurmCluster, slurm_pair: SlurmCluster, tmp_path: Path
) -> None:
    seqera = str(Path(sys.executable).parent / "seqera")
    for cluster, name in ((slurm, "one"), (slurm_pair, "pair")):
        env = {**os.environ, **cluster.env}
        out = tmp_path / f"{name}.yaml"
        done = subprocess.run([seqera, "platform", "generate", "--from", "slurm", "--name", name,
                               "-o", str(out)], env=env, capture_output=True, text=True,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        assert "scheduler: slurm" in text and "default_queue: debug" in text, text
    one, pair = (tmp_path / "one.yaml").read_text(), (tmp_path / "pair.yaml").read_text()
    assert "max_cpus: 16" in one and "max_cpus: 2" in pair
    # a job the pair's 2-CPU nodes cannot hold is refused, naming the queue's limit
    argv = [seqera, "validate", "--engine", "snakemake", "--set", "threads=4"]
    small = subprocess.run([*argv, "--platform", str(tmp_path / "pair.yaml")],
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert small.returncode == 2 and "debug" in small.stdout + small.stderr, small
    fits = subprocess.run([*argv, "--platform", str(tmp_path / "one.yaml")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert fits.returncode == 0 and "debug" in fits.stdout, fits
