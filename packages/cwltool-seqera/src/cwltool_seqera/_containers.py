"""Containerised CWL jobs on a backend: cwltool's runtime command line, run on the node.

cwltool builds the container runtime's command line for each job itself
(``cwltool/docker.py`` ``DockerCommandLineJob.create_runtime``: ``docker|podman run -i``,
``--mount=type=bind,...`` for the output directory, the tmpdir and every staged input,
``--workdir``, ``--read-only=true``, ``--net=none``, ``--user=UID:GID``, ``--rm``,
``--cidfile=...``, ``--env=K=V``; ``cwltool/singularity.py``
``SingularityCommandLineJob.create_runtime``: ``singularity --quiet run --contain --ipc
--cleanenv ... --bind ...`` with the environment as ``SINGULARITYENV_*`` variables).
cwltool-seqera keeps that command line unchanged and only changes where it runs: the
job's script on the compute node runs it, behind a short POSIX ``sh`` prelude that

* says clearly when the runtime is not installed on the node (exit 127), and
* for Docker and Podman, makes sure the image is there: ``<runtime> image inspect``, else
  ``<runtime> pull`` of the tool's ``dockerPull`` on the node (exit 125 when it fails).

The job's cores and memory (what the scheduler is asked for) are added as ``--cpus`` and
``--memory`` for Docker and Podman, which enforce them through cgroups; Singularity and
user-space runtimes (udocker) have no such flags and get none.

On a cluster cwltool's own image step (``get_from_requirements``: ``docker inspect``,
``pull``, ``build``, ``load``, ``import`` on this machine) is skipped unless the user asks
for ``--seqera-pull-first``: the images then come once per image onto this host before the
first job that needs them, which serves nodes that share its image store. A
``dockerFile``, ``dockerLoad`` or ``dockerImport`` cannot be honoured on the nodes without
it, and is refused before submission. Singularity's image is a file: cwltool fetches it
into its cache (``CWL_SINGULARITY_CACHE``), which must be on a filesystem the nodes share.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import attrs

__all__ = [
    "PRELUDE",
    "ContainerPolicy",
    "container_argv",
    "node_image_refusal",
    "runtime_with_limits",
]

# $1 runtime executable, $2 image, $3 what to pull ("" for none, or for Singularity's
# files: then only the runtime is checked); the runtime's own argv follows.
PRELUDE = """\
exe=$1 image=$2 pull=$3 kind=$4; shift 4
node=${HOSTNAME:-$(uname -n)}
if ! command -v "$exe" >/dev/null 2>&1; then
  echo "cwltool-seqera: the container runtime '$exe' is not installed on node $node \
(PATH=$PATH); install it there, or run with --no-container" >&2
  exit 127
fi
if [ "$kind" = image ] && ! "$exe" image inspect "$image" >/dev/null 2>&1; then
  if [ -z "$pull" ]; then
    echo "cwltool-seqera: image $image is not on node $node and the tool gives no \
dockerPull to fetch it" >&2
    exit 125
  fi
  echo "cwltool-seqera: pulling $pull on node $node" >&2
  if ! "$exe" pull "$pull" >&2; then
    echo "cwltool-seqera: could not pull image $pull on node $node" >&2
    exit 125
  fi
fi
exec "$@"
"""

_UNHONOURED = ("dockerFile", "dockerLoad", "dockerImport")
_LIMITED = ("docker", "podman")  # runtimes whose `run` takes --cpus and --memory


@attrs.frozen
class ContainerPolicy:
    """How one run treats its containers.

    ``on_node``: jobs run on other machines (a cluster), so images are made ready there,
    not by cwltool on this host. ``pull_first``: cwltool's own image step still runs here,
    once per image, before the first job that needs it (``--seqera-pull-first``).
    ``backend`` names the backend in error messages.
    """

    on_node: bool = False
    pull_first: bool = False
    backend: str = "local"

    @classmethod
    def for_executor(cls, executor: str, pull_first: bool = False) -> ContainerPolicy:
        """The policy of ``--executor``: only the local backend runs jobs on this host."""
        return cls(on_node=executor != "local", pull_first=pull_first, backend=executor)

    @property
    def images_here(self) -> bool:
        """Whether cwltool's own image step runs on this host."""
        return not self.on_node or self.pull_first


def node_image_refusal(requirement: Mapping[str, object], policy: ContainerPolicy) -> str | None:
    """Why a DockerRequirement cannot be honoured on this backend's nodes, or None."""
    if policy.images_here:
        return None
    given = [key for key in _UNHONOURED if requirement.get(key)]
    if not given or requirement.get("dockerPull"):
        return None  # a dockerPull fetches the image on the node whatever else is given
    return (
        f"DockerRequirement {given[0]}: the {policy.backend} backend runs jobs on other "
        f"nodes, where cwltool-seqera cannot {_VERB[given[0]]} the image; build and push "
        "it to a registry and give dockerPull, or pass --seqera-pull-first when the nodes "
        "share this host's image store (the image is then made here before the jobs)"
    )


_VERB = {"dockerFile": "build", "dockerLoad": "load", "dockerImport": "import"}


def runtime_with_limits(
    runtime: Sequence[str], cpus: float | None, memory: int | None
) -> list[str]:
    """``docker|podman run`` argv (ending with the image) with the job's cores and memory.

    Any ``--cpus``/``--memory`` cwltool put there (``--strict-cpu-limit``,
    ``--strict-memory-limit``) gives way to the job's request, which is what the scheduler
    grants; memory is rounded up to whole MiB, so the container never gets less.
    """
    argv = list(runtime)
    if not argv or os.path.basename(argv[0]) not in _LIMITED:
        return argv
    *flags, image = argv
    kept = [f for f in flags if not f.startswith(("--cpus=", "--memory="))]
    if cpus:
        kept.append(f"--cpus={cpus:g}")
    if memory:
        kept.append(f"--memory={math.ceil(memory / 2**20)}m")
    return [*kept, image]


def container_argv(
    command: Sequence[str],
    *,
    exe: str,
    image: str,
    pull: str | None,
    env: Mapping[str, str],
    user_space: bool = False,
) -> list[str]:
    """The argv a job runs for a containerised command: env additions, prelude, command.

    ``command`` runs the runtime ``exe`` (cwltool's runtime command line followed by the
    tool's own, possibly behind a stdin redirection). ``env`` holds only what cwltool
    added for the runtime (Singularity's ``SINGULARITYENV_*``); the rest of the
    environment is the node's, which the runtime client needs as it is (``PATH``,
    ``XDG_RUNTIME_DIR``, ``CONTAINERS_CONF``...). A user-space runtime (udocker) fetches
    its images itself, and Singularity's image is a file: only the runtime is checked.
    """
    kind = "file" if user_space or os.path.basename(exe) not in _LIMITED else "image"
    prelude = ["/bin/sh", "-c", PRELUDE, "cwltool-seqera", exe, image, pull or "", kind]
    added = [f"{key}={value}" for key, value in env.items()]
    return (["env", *added] if added else []) + prelude + list(command)
