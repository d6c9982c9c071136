"""The ``cwltool-seqera`` command: cwltool's own main with this package's tools and executor."""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import signal
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

import cwltool.main
from cwltool.context import LoadingContext

from seqera_core.backends.registry import entry
from seqera_core.config import Config, load_config
from seqera_core.errors import SeqeraError, UsageError
from seqera_core.history import DEFAULT_HISTORY
from seqera_core.session import Session

from ._containers import ContainerPolicy
from ._executor import DispatchingExecutor
from ._job import RunSettings
from ._options import SeqeraOptions, help_text, parse_options
from ._poller import JobPoller
from ._resume import resume
from ._staging import S3Staging
from ._tool import make_tool_factory

__all__ = ["main", "make_session", "staging_arguments"]

_log = logging.getLogger("cwltool")
_STAGING_FLAGS = ("--tmpdir-prefix", "--tmp-outdir-prefix")


# Config sections with a --seqera-<section> flag of their own.
_FLAGGED = ("ecs", "batch")


def _config(options: SeqeraOptions) -> Config:
    """seqera config with this command's flags on top (the same layers every engine reads)."""
    flags = {
        "backend": options.executor,
        "platform": None if options.platform is None else str(options.platform),
        "resolver.url": options.resolver_url,
        "history": options.history,
        "labels": dict(options.labels) or None,
        "local.cpus": options.local_cpus,
        "local.memory": options.local_memory,
        **{f"ecs.{key}": value for key, value in options.ecs.items()},
        **{f"batch.{key}": value for key, value in options.batch.items()},
        # a flag given turns the guard off; not given leaves the config's choice
        "sizing.shrink_self_sizing": options.shrink_self_sizing or None,
    }
    return load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)


def make_session(
    options: SeqeraOptions,
    workdir: Path,
    config: Config | None = None,
    *,
    run_id: str = "",
    run_name: str = "cwl",
) -> Session:
    """The run's session: backend, platform, resolvers, history and labels from seqera
    config (``seqera.yaml``, ``$SEQERA_*``) with ``--executor``/``--seqera-*`` on top.

    Batch schedulers take ``--seqera-backend-option`` keywords and keep job files under
    ``workdir/jobs``; the local backend's logs go to ``workdir/logs``; ECS and AWS Batch
    take the core's ``ecs.*``/``batch.*`` settings with ``--seqera-ecs``/``--seqera-batch``
    on top.
    """
    config = config or _config(options)
    backend = entry(str(config.get("backend")))
    # a routing backend hands them to its batch candidates
    if options.backend_options and not (backend.batch or backend.composite):
        own = backend.section in _FLAGGED  # the cloud backends take their own flag
        hint = f" (use --seqera-{backend.section} KEY=VALUE)" if own else ""
        raise UsageError(
            f"--seqera-backend-option {sorted(options.backend_options)[0]}: the "
            f"{backend.name} backend takes none{hint}"
        )
    if not backend.shared_fs and options.s3_prefix is None:
        raise UsageError(
            f"--executor {backend.name}: --seqera-s3-prefix s3://BUCKET/PREFIX is required "
            "(its jobs have no shared filesystem; their inputs and outputs travel through S3)"
        )
    run_id = run_id or uuid.uuid4().hex[:12]
    session = Session(
        config,
        "cwltool",
        run_id=run_id,
        label_prefix="cwl",
        metadata={
            "engine": "cwltool-seqera",
            "run-name": run_name,
            "run-id": run_id,
            "user": getpass.getuser(),
        },
        work_dir=lambda found: workdir / ("jobs" if found.batch else "logs"),
        backend_options=options.backend_options,
        warn=lambda message: _log.warning("seqera: %s", message),
        ledger=workdir / "runs",
        # recorded for the summary and `seqera report` even without --seqera-history,
        # which alone makes jobs sized from the history
        record_to=DEFAULT_HISTORY,
    )
    try:
        session.backend  # noqa: B018 - open it now: a bad setting is an error before cwltool starts
    except SeqeraError as err:
        session.close()
        if backend.section in _FLAGGED and f"{backend.section}." in str(err):
            raise UsageError(f"{err} (or --seqera-{backend.section} KEY=VALUE)") from None
        if backend.batch:
            raise UsageError(f"--seqera-backend-option for {backend.name}: {err}") from None
        raise
    return session


def staging_arguments(backend: str, argv: Sequence[str], workdir: Path) -> list[str]:
    """cwltool flags putting staging and output directories where compute nodes read them.

    Only for batch schedulers, and only for flags the user did not give: cwltool's own
    default is under /tmp, which is local to each node. Without a shared file system (ECS),
    ``--no-container``: the task's image is the job's container, and cwltool must not wrap
    it in another.
    """
    found = entry(backend)
    if not found.shared_fs and "--no-container" not in argv:
        return ["--no-container"]
    if not found.batch and not found.composite:  # routing may send jobs to a cluster
        return []
    given = {a.split("=", 1)[0] for a in argv}
    if "--cachedir" in given:
        # the outputs go to the cache (cwltool allows no --tmp-outdir-prefix beside it),
        # which must then be where the nodes see it, as the flags below would make it
        given.add("--tmp-outdir-prefix")
    added = []
    for flag, sub in zip(_STAGING_FLAGS, ("tmp", "out"), strict=True):
        if flag not in given:
            (workdir / sub).mkdir(parents=True, exist_ok=True)
            added.append(f"{flag}={workdir / sub}{os.sep}")
    return added


def _workflow_name(argv: Sequence[str]) -> str:
    for arg in argv:
        if not arg.startswith("-") and ".cwl" in arg:
            return Path(arg.split("#", 1)[0]).stem
    return "cwl"


def main(argv: Sequence[str] | None = None) -> int:
    """Run cwltool with every job dispatched through the chosen backend; returns the exit code.

    Ctrl-C cancels what the run submitted (the executor and the session's close do that on
    the way out) and ends with 130, 128 + SIGINT as a shell reports it, and one line
    instead of a traceback."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        print("cwltool-seqera: interrupted; the run's jobs were cancelled", file=sys.stderr)
        return 130


def _main(args: list[str]) -> int:
    cut = args.index("--") if "--" in args else len(args)
    if {"-h", "--help"} & set(args[:cut]):
        # this command's options first, then cwltool's own help (which exits 0)
        print(help_text())
        print("cwltool options:", flush=True)
        try:
            return int(cwltool.main.main(argsl=["--help"]))
        except SystemExit as done:  # argparse's help ends with it
            return done.code if isinstance(done.code, int) else 0
    workdir: Path | None = None
    try:
        options, rest = parse_options(args)
        workdir = (options.workdir or Path.cwd() / "cwltool-seqera-work").absolute()
        run_id = uuid.uuid4().hex[:12]
        session = make_session(options, workdir, run_id=run_id, run_name=_workflow_name(rest))
    except (SeqeraError, OSError) as err:
        print(f"cwltool-seqera: error: {_said(err, workdir)}", file=sys.stderr)
        return 2
    with session:
        staging = None
        if not session.entry.shared_fs:
            assert options.s3_prefix is not None  # make_session refuses ECS without it
            staging = S3Staging(options.s3_prefix)
        elif options.s3_prefix is not None and getattr(session.backend, "unshared", None):
            # routing with a cloud candidate: a job may go there with its files through S3
            staging = S3Staging(options.s3_prefix)
        # a routing backend sees local jobs end at once and asks schedulers less often
        local = session.backend_name == "local" or session.entry.composite
        interval = options.poll_interval or (0.1 if local else 1.0)
        poller = JobPoller(
            session.backend,
            interval=interval,
            unknown_timeout=options.unknown_timeout,
            submit=session.submit,
        )
        settings = RunSettings(
            session, poller, workdir / "logs", staging=staging, image=options.image,
            containers=ContainerPolicy.for_executor(session.backend_name, options.pull_first),
        )  # fmt: skip
        loading = LoadingContext()
        loading.construct_tool_object = make_tool_factory(settings)
        try:
            with _terminating():
                resume(session, poller, rest, staging)
                code: int = cwltool.main.main(
                    argsl=staging_arguments(session.backend_name, rest, workdir) + rest,
                    executor=DispatchingExecutor(poller),
                    loadingContext=loading,
                )
        except _Terminated as stop:
            name = signal.Signals(stop.signum).name
            print(f"cwltool-seqera: {name}: the run's jobs are cancelled", file=sys.stderr)
            return 128 + stop.signum
        finally:
            poller.close()
        _report(session, options.report)
        return code


class _Terminated(BaseException):
    """SIGTERM or SIGHUP: a BaseException, so cwltool's ``except Exception`` lets it
    through to the executor, which cancels every submitted job (as for Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _terminating() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`_Terminated` in the main thread while the run
    goes: without this, SIGTERM (its default action) ends the process at once and leaves
    every job it submitted to run unwatched. cwltool's own ``run()`` (not used here, it
    kills local processes) turns SIGTERM into ``sys.exit`` in the same way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: FrameType | None) -> None:
        for number in previous:  # a second signal must not cut the cancelling short
            signal.signal(number, signal.SIG_IGN)
        raise _Terminated(signum)

    previous = {s: signal.signal(s, terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _report(session: Session, path: Path | None) -> None:
    """The run's efficiency in a few lines, and its page where --seqera-report asks."""
    for line in session.summary():
        _log.info("seqera: %s", line)
    if path is None:
        return
    try:
        written = session.write_report(path)
    except SeqeraError as err:
        _log.warning("seqera: no report: %s", err)
        return
    _log.info("seqera: report of this run: %s", written.absolute())


def _said(err: Exception, workdir: Path | None) -> str:
    """The error, naming --seqera-workdir when it is about a file under it (a name too long,
    a directory that cannot be made)."""
    where = getattr(err, "filename", None)
    if isinstance(err, OSError) and workdir and where and str(where).startswith(str(workdir)):
        return (f"--seqera-workdir {str(workdir)!r}: cannot use {str(where)!r}: "
                f"{err.strerror or err}; expected a directory this user can write")  # fmt: skip
    return str(err)
