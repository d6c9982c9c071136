"""The job class cwltool runs for each CommandLineTool: staged by cwltool, run by a backend."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from cwltool.command_line_tool import CommandLineTool
from cwltool.context import LoadingContext, RuntimeContext
from cwltool.errors import WorkflowException
from cwltool.job import CommandLineJob, JobBase, relink_initialworkdir
from cwltool.process import Process
from cwltool.utils import bytes2str_in_dicts
from cwltool.workflow import default_make_tool

from seqera_core.backends import JobSpec
from seqera_core.dialects.cwl import request_from_resources
from seqera_core.errors import SeqeraError
from seqera_core.models import ResourceRequest
from seqera_core.pipeline import Prepared, prepare
from seqera_core.platforms import Platform
from seqera_core.resolvers import Resolver

from ._dispatch import Dispatcher
from ._status import process_status, status_message

__all__ = ["RunSettings", "SeqeraCommandLineJob", "job_request", "make_tool_factory"]

_log = logging.getLogger("cwltool")


@attrs.frozen
class RunSettings:
    """What every job of one run shares: the dispatcher, the checks and the labels."""

    dispatcher: Dispatcher
    platform: Platform | None = None
    resolvers: Sequence[Resolver] = ()
    run_labels: Mapping[str, str] = attrs.field(factory=dict)
    logdir: Path | None = None


def job_request(resources: Mapping[str, Any], timelimit: Any, name: str) -> ResourceRequest:
    """The common request for one job: cwltool's evaluated resources and its time limit."""
    step = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
    request = request_from_resources(resources, timelimit=timelimit or None, process=step)
    return attrs.evolve(request, labels={"cwl/step": step, "cwl/job": name})


def _stdin_wrapped(command: list[str], stdin: str | None) -> list[str]:
    if stdin is None:
        return command
    # JobSpec has no stdin: the shell redirects, then execs the tool's own argv unchanged.
    return ["/bin/sh", "-c", 'exec "$@" < "$0"', stdin, *command]


class SeqeraCommandLineJob(CommandLineJob):
    """cwltool's job with the subprocess replaced by a submission through a seqera backend."""

    settings: RunSettings  # set on the per-run subclass made by make_tool_factory

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
        self._finish(outputs, status, runtimeContext)

    def _dispatch(
        self, runtime: list[str], env: dict[str, str], context: RuntimeContext
    ) -> tuple[dict[str, Any], str]:
        command = [str(part) for part in runtime + self.command_line]
        if not command:
            raise WorkflowException(f"[job {self.name}] the command line is empty")
        if context.secret_store is not None:
            command = context.secret_store.retrieve(command)  # type: ignore[assignment]
            env = context.secret_store.retrieve(env)  # type: ignore[assignment]
        stdin = None
        if self.stdin is not None:
            found = self.pathmapper.reversemap(self.stdin)
            if found is None:
                raise WorkflowException(f"stdin {self.stdin} is not among the staged files")
            stdin = found[1]
        stdout = self._log_path(self.stdout, "stdout")
        stderr = self._log_path(self.stderr, "stderr")
        prepared = self._prepare()
        # A clean environment as cwltool gives its subprocess (HOME, TMPDIR, PATH and the
        # tool's EnvVarRequirement): the backends would otherwise pass their own through.
        argv = ["env", "-i", "--", *(f"{k}={v}" for k, v in env.items())]
        argv += _stdin_wrapped(command, stdin)
        spec = JobSpec(
            name=self.name,
            command=argv,
            request=prepared.request,
            workdir=self.outdir,
            labels=prepared.labels,
            stdout=stdout,
            stderr=stderr,
        )
        _log.info("[job %s] %s$ %s", self.name, self.outdir, " ".join(command))
        result = self.settings.dispatcher.run(
            spec,
            on_submit=lambda h: _log.info(
                "[job %s] submitted to %s as %s", self.name, h.backend, h.native_id
            ),
            limit=spec.request.time,
        )
        self._relay(stdout, self.stdout, context.default_stdout)
        self._relay(stderr, self.stderr, context.default_stderr)
        why = status_message(result)
        code = result.exit_code
        if why is not None:
            _log.warning("[job %s] %s", self.name, why)
            status = "permanentFail"
        else:
            status = process_status(
                code,
                success=self.successCodes,
                temporary=self.temporaryFailCodes,
                permanent=self.permanentFailCodes,
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
        outputs = bytes2str_in_dicts(
            self.collect_outputs(self.outdir, -1 if code is None else code)
        )  # type: ignore[arg-type]
        return outputs, status

    def _prepare(self) -> Prepared:
        request = job_request(self.builder.resources, self.timelimit, self.name)
        declared, _ = self.get_requirement("ResourceRequirement")
        if not any(k.startswith(("tmpdir", "outdir")) for k in declared or {}):
            # CWL's implicit 1 GiB tmpdir + outdir would become e.g. sbatch --tmp, which a
            # node without TmpDisk refuses: only a declared size goes to the scheduler.
            request = attrs.evolve(request, disk=None)
        settings = self.settings
        prepared = prepare(
            request,
            platform=settings.platform,
            resolvers=settings.resolvers,
            run_labels=settings.run_labels,
        )
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


class SeqeraCommandLineTool(CommandLineTool):
    """A CommandLineTool whose jobs go to the run's backend."""

    job_class: type[SeqeraCommandLineJob]

    def make_job_runner(self, runtimeContext: RuntimeContext) -> type[JobBase]:
        """cwltool's choice, unless it is the plain local job: then this run's job class."""
        chosen = super().make_job_runner(runtimeContext)
        if chosen is not CommandLineJob:
            raise WorkflowException(
                f"{self.tool['id']}: software containers are not dispatched by "
                "cwltool-seqera; run with --no-container"
            )
        return self.job_class


def make_tool_factory(settings: RunSettings) -> Callable[[Any, LoadingContext], Process]:
    """A ``construct_tool_object`` for this run: CommandLineTools become seqera ones."""
    job_class = type("SeqeraCommandLineJob", (SeqeraCommandLineJob,), {"settings": settings})
    tool_class = type("SeqeraCommandLineTool", (SeqeraCommandLineTool,), {"job_class": job_class})

    def make_tool(toolpath_object: Any, loading_context: LoadingContext) -> Process:
        if (
            isinstance(toolpath_object, Mapping)
            and toolpath_object.get("class") == "CommandLineTool"
        ):
            return tool_class(toolpath_object, loading_context)
        return default_make_tool(toolpath_object, loading_context)

    return make_tool
