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

from seqera_core.backends import Backend, open_backend, squash_policy
from seqera_core.config import Config, load_config
from seqera_core.errors import SeqeraError, UsageError
from seqera_core.history import History, open_history
from seqera_core.labels import run_labels
from seqera_core.platforms import load as load_platform
from seqera_core.resolvers import HttpResolver, PredictiveResolver, Resolver, discover

from ._containers import ContainerPolicy
from ._dispatch import Dispatcher
from ._executor import DispatchingExecutor
from ._job import RunSettings
from ._options import SeqeraOptions, parse_options
from ._staging import S3Staging
from ._tool import make_tool_factory

__all__ = ["main", "make_backend", "staging_arguments"]

_SHARED_FS = ("slurm", "pbs")
_STAGING_FLAGS = ("--tmpdir-prefix", "--tmp-outdir-prefix")


def make_backend(options: SeqeraOptions, workdir: Path, config: Config | None = None) -> Backend:
    """The backend ``--executor`` names, built by the core's ``open_backend``.

    Slurm and PBS take ``--seqera-backend-option`` keywords; ECS takes the core's ``ecs.*``
    configuration (seqera.yaml, ``$SEQERA_ECS_*``) with ``--seqera-ecs`` on top.
    """
    extra = dict(options.backend_options)
    name = options.executor
    if extra and name in ("local", "ecs"):
        hint = " (use --seqera-ecs KEY=VALUE)" if name == "ecs" else ""
        raise UsageError(
            f"--seqera-backend-option {sorted(extra)[0]}: the {name} backend takes none{hint}"
        )
    if name == "local":
        return open_backend(
            name, cpus=options.local_cpus, memory=options.local_memory, workdir=workdir / "logs"
        )
    if name == "ecs":
        if options.s3_prefix is None:
            raise UsageError(
                "--executor ecs: --seqera-s3-prefix s3://BUCKET/PREFIX is required (ECS jobs "
                "have no shared filesystem; their inputs and outputs travel through S3)"
            )
        if config is None:
            config = _config(options)
        try:
            return open_backend(name, **config.section("ecs"))
        except UsageError as err:
            raise UsageError(f"{err} (or --seqera-ecs KEY=VALUE)") from None
        except TypeError as err:
            raise UsageError(f"--seqera-ecs: {err}") from err
    # arrays or squashed allocations when seqera config asks (squash.*, $SEQERA_SQUASH_*)
    platform = load_platform(options.platform) if options.platform else None
    policy = squash_policy(config or _config(options), platform)
    try:
        return open_backend(name, work_dir=workdir / "jobs", squash=policy, **extra)
    except (TypeError, ValueError) as err:
        raise UsageError(f"--seqera-backend-option for {name}: {err}") from err


def _config(options: SeqeraOptions) -> Config:
    flags = {f"ecs.{key}": value for key, value in options.ecs.items()}
    return load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)


def staging_arguments(options: SeqeraOptions, argv: Sequence[str], workdir: Path) -> list[str]:
    """cwltool flags putting staging and output directories where compute nodes read them.

    Only for cluster backends, and only for flags the user did not give: cwltool's own
    default is under /tmp, which is local to each node. On ECS, ``--no-container``: the
    task's image is the job's container, and cwltool must not wrap it in another.
    """
    if options.executor == "ecs" and "--no-container" not in argv:
        return ["--no-container"]
    if options.executor not in _SHARED_FS:
        return []
    given = {a.split("=", 1)[0] for a in argv}
    added = []
    for flag, sub in zip(_STAGING_FLAGS, ("tmp", "out"), strict=True):
        if flag not in given:
            (workdir / sub).mkdir(parents=True, exist_ok=True)
            added.append(f"{flag}={workdir / sub}{os.sep}")
    return added


def _resolvers(options: SeqeraOptions, history: History | None) -> list[Resolver]:
    found = discover()
    if options.resolver_url:
        found.append(HttpResolver(options.resolver_url))
    if history is not None:
        found.append(PredictiveResolver(history))
    return found


def _history(options: SeqeraOptions, config: Config) -> History | None:
    """``--seqera-history``, else seqera config's ``history`` (``$SEQERA_HISTORY``)."""
    location = options.history or config.get("history")
    return open_history(os.path.expanduser(str(location))) if location else None


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
        config = _config(options)
        backend = make_backend(options, workdir, config)
        platform = None if options.platform is None else load_platform(options.platform)
        run_id = uuid.uuid4().hex[:12]
        staging = None
        if options.executor == "ecs":
            assert options.s3_prefix is not None  # make_backend refuses ECS without it
            staging = S3Staging(options.s3_prefix, run_id)
        labels = run_labels(
            "cwl",
            {
                "engine": "cwltool-seqera",
                "run-name": _workflow_name(rest),
                "run-id": run_id,
                "user": getpass.getuser(),
            },
            options.labels,
        )
        history = _history(options, config)
        resolvers = _resolvers(options, history)
    except (SeqeraError, OSError) as err:
        print(f"cwltool-seqera: error: {err}", file=sys.stderr)
        return 2
    interval = options.poll_interval or (0.1 if options.executor == "local" else 1.0)
    dispatcher = Dispatcher(backend, interval=interval, unknown_timeout=options.unknown_timeout)
    settings = RunSettings(
        dispatcher, platform, tuple(resolvers), labels, workdir / "logs",
        staging=staging, image=options.image, history=history, run_id=run_id,
        containers=ContainerPolicy.for_executor(options.executor, options.pull_first),
    )  # fmt: skip
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
        close = getattr(backend, "close", None)
        if callable(close):
            close()
        if history is not None:
            history.close()
