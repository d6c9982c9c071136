"""The ``cwltool-seqera`` command: cwltool's own main with this package's tools and executor."""

from __future__ import annotations

import getpass
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import cwltool.main
from cwltool.context import LoadingContext

from seqera_core import backends
from seqera_core.backends import Backend, LocalBackend, PbsBackend, SlurmBackend
from seqera_core.errors import SeqeraError, UsageError
from seqera_core.labels import run_labels
from seqera_core.platforms import load as load_platform
from seqera_core.resolvers import HttpResolver, Resolver, discover

from ._dispatch import Dispatcher
from ._executor import DispatchingExecutor
from ._job import RunSettings, make_tool_factory
from ._options import SeqeraOptions, parse_options

__all__ = ["main", "make_backend", "staging_arguments"]

_SHARED_FS = ("slurm", "pbs")
_STAGING_FLAGS = ("--tmpdir-prefix", "--tmp-outdir-prefix")


def make_backend(options: SeqeraOptions, workdir: Path) -> Backend:
    """The backend ``--executor`` names, with ``--seqera-backend-option`` passed through."""
    extra = dict(options.backend_options)
    if options.executor == "local":
        if extra:
            raise UsageError(
                f"--seqera-backend-option {sorted(extra)[0]}: the local backend takes none"
            )
        return LocalBackend(options.local_cpus, options.local_memory, workdir / "logs")
    if options.executor == "ecs":
        # The ECS backend (an extra of the core) and S3 staging come with the ECS issue.
        if not hasattr(backends, "EcsBackend"):
            raise UsageError(
                "--executor ecs: not available yet (seqera_core.backends has no ECS backend); "
                "use local, slurm or pbs"
            )
        raise UsageError("--executor ecs: S3 staging for CWL jobs is not available yet")
    kind = SlurmBackend if options.executor == "slurm" else PbsBackend
    try:
        return kind(work_dir=workdir / "jobs", **extra)  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        raise UsageError(f"--seqera-backend-option for {options.executor}: {err}") from err


def staging_arguments(options: SeqeraOptions, argv: Sequence[str], workdir: Path) -> list[str]:
    """cwltool flags putting staging and output directories where compute nodes read them.

    Only for cluster backends, and only for flags the user did not give: cwltool's own
    default is under /tmp, which is local to each node.
    """
    if options.executor not in _SHARED_FS:
        return []
    given = {a.split("=", 1)[0] for a in argv}
    added = []
    for flag, sub in zip(_STAGING_FLAGS, ("tmp", "out"), strict=True):
        if flag not in given:
            (workdir / sub).mkdir(parents=True, exist_ok=True)
            added.append(f"{flag}={workdir / sub}{os.sep}")
    return added


def _resolvers(options: SeqeraOptions) -> list[Resolver]:
    found = discover()
    if options.resolver_url:
        found.append(HttpResolver(options.resolver_url))
    return found


def _workflow_name(argv: Sequence[str]) -> str:
    for arg in argv:
        if not arg.startswith("-") and ".cwl" in arg:
            return Path(arg.split("#", 1)[0]).stem
    return "cwl"


def main(argv: Sequence[str] | None = None) -> int:
    """Run cwltool with every job dispatched through the chosen backend; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options, rest = parse_options(args)
        workdir = (options.workdir or Path.cwd() / "cwltool-seqera-work").absolute()
        backend = make_backend(options, workdir)
        platform = None if options.platform is None else load_platform(options.platform)
        labels = run_labels(
            "cwl",
            {
                "engine": "cwltool-seqera",
                "run-name": _workflow_name(rest),
                "run-id": uuid.uuid4().hex[:12],
                "user": getpass.getuser(),
            },
            options.labels,
        )
        resolvers = _resolvers(options)
    except (SeqeraError, OSError) as err:
        print(f"cwltool-seqera: error: {err}", file=sys.stderr)
        return 2
    interval = options.poll_interval or (0.1 if options.executor == "local" else 1.0)
    dispatcher = Dispatcher(backend, interval=interval)
    settings = RunSettings(dispatcher, platform, tuple(resolvers), labels, workdir / "logs")
    loading = LoadingContext()
    loading.construct_tool_object = make_tool_factory(settings)
    try:
        return cwltool.main.main(
            argsl=staging_arguments(options, rest, workdir) + rest,
            executor=DispatchingExecutor(dispatcher),
            loadingContext=loading,
        )
    finally:
        dispatcher.close()
        if isinstance(backend, LocalBackend):
            backend.close()
