"""The job class cwltool runs for each CommandLineTool: staged by cwltool, run by a backend."""

from __future__ import annotations

import copy
import logging
import os
import shutil
import sys
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, cast

import attrs
from cwltool.context import RuntimeContext
from cwltool.errors import WorkflowException
from cwltool.job import CommandLineJob, relink_initialworkdir
from cwltool.utils import bytes2str_in_dicts

from seqera_core.backends import JobSpec, JobState, JobStatus
from seqera_core.dialects.cwl import request_from_resources
from seqera_core.errors import SeqeraError
from seqera_core.models import ResourceRequest
from seqera_core.pipeline import Prepared
from seqera_core.resume import job_key
from seqera_core.session import Finished, Session
from seqera_core.sizing import references_memory

from ._containers import ContainerPolicy
from ._poller import JobPoller
from ._s3job import S3StagedJob
from ._staging import S3JobFiles, S3Staging
from ._status import process_status, status_message

__all__ = ["DispatchingJob", "RunSettings", "SeqeraCommandLineJob", "job_request"]

_log = logging.getLogger("cwltool")
_CUDA = "http://commonwl.org/cwltool#CUDARequirement"


@attrs.frozen
class RunSettings:
    """What every job of one run shares: the run's session (platform, resolvers, labels,
    history) and the poller polling its backend."""

    session: Session
    poller: JobPoller
    logdir: Path | None = None
    staging: S3Staging | None = None  # ECS: no shared filesystem, files go through S3
    image: str | None = None  # ECS: for tools without a DockerRequirement
    containers: ContainerPolicy = attrs.field(factory=ContainerPolicy)  # where images are ready


def job_request(resources: Mapping[str, Any], timelimit: Any, name: str) -> ResourceRequest:
    """The common request for one job: cwltool's evaluated resources and its time limit."""
    step = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
    step = step.removesuffix(".cwl")  # a lone tool's job is named after its file
    request = request_from_resources(resources, timelimit=timelimit or None, process=step)
    return attrs.evolve(request, labels={"cwl/step": step, "cwl/job": name})


def _stdin_wrapped(command: list[str], stdin: str | None) -> list[str]:
    if stdin is None:
        return command
    # JobSpec has no stdin: the shell redirects, then execs the tool's own argv unchanged.
    return ["/bin/sh", "-c", 'exec "$@" < "$0"', stdin, *command]


class DispatchingJob(S3StagedJob):
    """cwltool's job with the subprocess replaced by a submission through a seqera backend.

    A mixin over cwltool's job classes: :class:`SeqeraCommandLineJob` runs the tool on the
    node's host, the container jobs (``_container_job``) run cwltool's runtime command line.
    """

    settings: RunSettings  # set on the per-run subclass made by make_tool_factory

    def _argv(
        self, command: list[str], env: dict[str, str], stdin: str | None, prepared: Prepared
    ) -> list[str]:
        """What the backend runs for ``command`` (runtime + the tool's command line)."""
        # A clean environment as cwltool gives its subprocess (HOME, TMPDIR, PATH and
        # the tool's EnvVarRequirement): the backends would otherwise pass their own.
        argv = ["env", "-i", "--", *(f"{k}={v}" for k, v in env.items())]
        return argv + _stdin_wrapped(command, stdin)

    def _setup(self, runtimeContext: RuntimeContext) -> None:
        """cwltool's set-up, without its GPU check for a job another machine runs.

        ``JobBase._setup`` (cwltool/job.py) refuses a ``cwltool:CUDARequirement`` unless
        this machine's ``nvidia-smi`` shows the GPUs; a job sent to a cluster or a cloud
        gets them on its node, and the platform (or the routing backend) checks the count
        the request carries. The local backend keeps cwltool's check: its jobs run here.
        """
        builder = self.builder
        if self.settings.session.backend_name == "local" or not any(
            r.get("class") == _CUDA for r in (*builder.requirements, *builder.hints)
        ):
            super()._setup(runtimeContext)
            return
        shown = copy.copy(builder)  # the same builder, its CUDARequirement not shown
        shown.requirements = [r for r in builder.requirements if r.get("class") != _CUDA]
        shown.hints = [r for r in builder.hints if r.get("class") != _CUDA]
        self.builder = shown
        try:
            super()._setup(runtimeContext)
        finally:
            self.builder = builder

    def _after(self, runtime: list[str], context: RuntimeContext) -> None:
        """Clean-up once the job has ended (whatever its outcome)."""

    def _execute(
        self,
        runtime: list[str],
        env: MutableMapping[str, str],
        runtimeContext: RuntimeContext,
        monitor_function: Callable[..., None] | None = None,
    ) -> None:
        outputs: dict[str, Any] = {}
        try:
            outputs, status = self._dispatch(list(runtime), dict(env), runtimeContext)
        except (WorkflowException, SeqeraError, OSError) as err:
            _log.error("[job %s] %s", self.name, err)
            status = "permanentFail"
        finally:
            self._after(list(runtime), runtimeContext)
        self._finish(outputs, status, runtimeContext)

    def _dispatch(
        self, runtime: list[str], env: dict[str, str], context: RuntimeContext
    ) -> tuple[dict[str, Any], str]:
        if self.mpi_procs:
            # What cwltool's own JobBase._execute does for cwltool:MPIRequirement (this
            # class replaces it): its MPI runner and the process count go first.
            menv = context.mpi_config
            runtime = [menv.runner, menv.nproc_flag, str(self.mpi_procs), *menv.extra_flags,
                       *runtime]  # fmt: skip
            menv.pass_through_env_vars(env)
            menv.set_env_vars(env)
        command = [str(part) for part in runtime + self.command_line]
        if not command:
            raise WorkflowException(f"[job {self.name}] the command line is empty")
        if context.secret_store is not None:
            # retrieve() keeps the shape it is given: a list stays a list, a dict a dict.
            store = context.secret_store
            revealed = store.retrieve(cast(Any, command))
            command = [str(part) for part in cast(list[Any], revealed)]
            shown = store.retrieve(cast(Any, env))
            env = {str(k): str(v) for k, v in cast(dict[str, Any], shown).items()}
        stdin = None
        if self.stdin is not None:
            found = self.pathmapper.reversemap(self.stdin)
            if found is None:
                raise WorkflowException(f"stdin {self.stdin} is not among the staged files")
            stdin = found[1]
        stdout = self._log_path(self.stdout, "stdout")
        stderr = self._log_path(self.stderr, "stderr")
        attempt = 0
        while True:
            attempt += 1
            prepared = self._prepare()
            staging, image = self.settings.staging, self.settings.image
            key = self._key(attempt)
            files: S3JobFiles | None = None
            # the files of a job a routing backend sends to a cloud candidate (see below)
            sent_through: list[S3JobFiles] = []
            if staging is None or self.settings.session.entry.shared_fs:
                argv = self._argv(command, env, stdin, prepared)
                spec = JobSpec(
                    name=self.name,
                    command=argv,
                    request=prepared.request,
                    workdir=self.outdir,
                    labels=prepared.labels,
                    stdout=stdout,
                    stderr=stderr,
                )
                if staging is not None and self._stageable(runtime, image):
                    spec = attrs.evolve(spec, staged=self._staged_form(
                        staging, image, prepared, command, env, key, sent_through))  # fmt: skip
            else:
                files, spec = self._through_s3(staging, image, prepared, command, env, key)
            spec = attrs.evolve(spec, key=key)
            _log.info("[job %s] %s$ %s", self.name, self.outdir, " ".join(command))
            result = self.settings.poller.run(
                spec,
                on_submit=lambda h: _log.info(
                    "[job %s] submitted to %s as %s%s",
                    self.name,
                    h.backend,
                    h.native_id,
                    f" ({_said(h.route)})" if h.route else "",  # a routing backend's choice and why
                ),
                limit=spec.request.time,
            )
            if sent_through:  # the routing backend sent it to the cloud: files in S3
                files = sent_through[-1]
            self._record(prepared.request, result)
            if result.state is JobState.SUCCEEDED or not self.settings.session.rescue(self.name):
                break
            # Never a gate: the right-sizer gave it less than it declared and it ran out.
            _log.warning(
                "[job %s] %s with less than it declared (the right-sizer's size): "
                "sent again at once", self.name, status_message(result, prepared.request),
            )  # fmt: skip
            if staging is not None and files is not None and context.rm_tmpdir:
                staging.remove(files)  # the next attempt stages its own
        if staging is not None and files is not None:
            fetched = self._fetch(staging, files, result, stdout, stderr)
            if not fetched and result.state is JobState.SUCCEEDED:
                result = attrs.evolve(
                    result, state=JobState.FAILED, exit_code=None,
                    reason="its outputs did not come back from S3",
                )  # fmt: skip
            if context.rm_tmpdir:
                staging.remove(files)
        self._relay(stdout, self.stdout, context.default_stdout)
        self._relay(stderr, self.stderr, context.default_stderr)
        why = status_message(result, prepared.request)
        code = result.exit_code
        if why is not None:
            _log.warning("[job %s] %s", self.name, why)
            status = "permanentFail"
        else:
            status = process_status(
                code,
                success=set(self.successCodes),
                temporary=set(self.temporaryFailCodes),
                permanent=set(self.permanentFailCodes),
            )
        if status != "success":
            _log.warning("[job %s] exited with status: %s", self.name, code)
        if "listing" in self.generatefiles and self.generatemapper is not None:
            relink_initialworkdir(
                self.generatemapper,
                self.outdir,
                self.builder.outdir,
                inplace_update=self.inplace_update,
            )
        context.log_dir_handler(
            self.outdir, self.base_path_logs, stdout if self.stdout else None,
            stderr if self.stderr else None,
        )  # fmt: skip
        collected = self.collect_outputs(self.outdir, -1 if code is None else code)
        # Given a mapping, bytes2str_in_dicts returns that mapping (converted in place).
        outputs = cast(dict[str, Any], bytes2str_in_dicts(collected))
        return outputs, status

    def _key(self, attempt: int) -> str:
        """The submission key: the job's output directory, which ``--cachedir`` makes
        ``CACHEDIR/<hash of the command line and inputs>``, the same in every run (a new
        directory each run without it, so nothing is adopted then), and the attempt."""
        return job_key("cwltool", os.path.abspath(self.outdir), attempt)

    def _record(self, request: ResourceRequest, result: JobStatus) -> None:
        # The session's store never fails a job: a failing history only warns.
        self.settings.session.record([Finished(request, result, task_id=self.name)])

    def _input_bytes(self) -> int | None:
        """The bytes of the job's input files (what the right-sizer sizes against)."""
        sizes = [f.get("size") for f in self.builder.files if f.get("class") == "File"]
        known = [s for s in sizes if isinstance(s, int)]
        return sum(known) if known else None

    def _prepare(self) -> Prepared:
        request = job_request(self.builder.resources, self.timelimit, self.name)
        request = attrs.evolve(
            request,
            input_bytes=self._input_bytes(),
            self_sizing=references_memory(self.builder.bindings, self.requirements, self.hints),
        )
        if self.mpi_procs:
            # cwltool:MPIRequirement's processes: cwltool prepends its MPI runner (mpirun
            # -n N, cwltool/job.py) to the command; the scheduler allots that many tasks,
            # each with the cores ResourceRequirement asks for.
            request = attrs.evolve(request, tasks=int(self.mpi_procs))
        declared, _ = self.get_requirement("ResourceRequirement")
        if not any(k.startswith(("tmpdir", "outdir")) for k in declared or {}):
            # CWL's implicit 1 GiB tmpdir + outdir would become e.g. sbatch --tmp, which a
            # node without TmpDisk refuses: only a declared size goes to the scheduler.
            request = attrs.evolve(request, disk=None)
        prepared = self.settings.session.prepare(request, task=self.name)
        if not prepared.ok:
            assert prepared.report is not None
            raise WorkflowException(
                f"[job {self.name}] the platform cannot run it: "
                + "; ".join(prepared.report.errors)
            )
        for note in prepared.notes:
            _log.info("[job %s] %s", self.name, note)
        return prepared

    def _log_path(self, declared: str | None, kind: str) -> str:
        if declared is not None:
            path = os.path.join(self.base_path_logs, declared)
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            return path
        # Not captured by the tool: kept beside the run and relayed to cwltool's own streams.
        logdir = self.settings.logdir or Path(self.tmpdir)
        logdir.mkdir(parents=True, exist_ok=True)
        return str(logdir / f"{self.name}.{kind}")

    @staticmethod
    def _relay(path: str, declared: str | None, stream: Any) -> None:
        if declared is not None:
            return
        target = stream if stream is not None else sys.stderr
        try:
            with open(path, errors="replace") as source:
                text = source.read()
        except FileNotFoundError:
            return
        if text and hasattr(target, "write"):
            target.write(text)
            target.flush()
        os.unlink(path)

    def _finish(self, outputs: dict[str, Any], status: str, context: RuntimeContext) -> None:
        if status == "success":
            _log.info("[job %s] completed %s", self.name, status)
        else:
            _log.warning("[job %s] completed %s", self.name, status)
        if context.workflow_eval_lock is None:
            raise WorkflowException("runtimeContext.workflow_eval_lock must not be None")
        if self.output_callback:
            with context.workflow_eval_lock:
                self.output_callback(outputs, status)
        if context.rm_tmpdir:
            if self.stagedir is not None and os.path.exists(self.stagedir):
                shutil.rmtree(self.stagedir, True)
            shutil.rmtree(self.tmpdir, True)


class SeqeraCommandLineJob(DispatchingJob, CommandLineJob):
    """A tool run on the node's host (``--no-container``, or a tool without a container)."""


def _said(route: str) -> str:
    # imported here: only a routed run has a decision to say
    from seqera_core.backends.route import said

    return said(route)
