"""The job class of a containerised tool: cwltool's own runtime command line, dispatched.

cwltool's ``ContainerCommandLineJob.run`` (``cwltool/job.py``) gets the image
(``get_from_requirements``), builds the runtime's command line (``create_runtime``) and
hands it to ``_execute``; this class keeps all of that and only changes two steps: the
image step, which on a cluster happens on the node (see :mod:`._containers`), and
``_execute``, which submits the command line to the run's backend behind the node-side
prelude, with the job's cores and memory added for Docker and Podman.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import MutableMapping
from typing import Any

from cwl_utils.types import CWLObjectType
from cwltool.context import RuntimeContext
from cwltool.errors import WorkflowException
from cwltool.job import ContainerCommandLineJob
from cwltool.singularity import SingularityCommandLineJob

from seqera_core.pipeline import Prepared

from ._containers import container_argv, node_image_refusal, runtime_with_limits
from ._job import DispatchingJob, _stdin_wrapped

__all__ = ["SeqeraContainerJob"]


class SeqeraContainerJob(DispatchingJob, ContainerCommandLineJob):
    """Mixed in front of cwltool's Docker, Podman, Singularity or udocker job class."""

    user_space = False  # --user-space-docker-cmd (udocker): no --cpus/--memory, no pulls

    def get_from_requirements(
        self,
        r: CWLObjectType,
        pull_image: bool,
        force_pull: bool,
        tmp_outdir_prefix: str,
        image_base_path: str | None = None,
    ) -> str | None:
        """cwltool's image step here (local backend, ``--seqera-pull-first``, Singularity's
        image file), else the image's name only: the job's prelude fetches it on the node."""
        policy = self.settings.containers
        if policy.images_here or isinstance(self, SingularityCommandLineJob):
            # The run's class is (this, cwltool's concrete class): super() reaches the latter.
            return super().get_from_requirements(  # type: ignore[safe-super]
                r, pull_image, force_pull, tmp_outdir_prefix, image_base_path
            )
        refusal = node_image_refusal(r, policy)
        if refusal is not None:
            raise WorkflowException(refusal)
        image = r.get("dockerImageId") or r.get("dockerPull")
        if not image:
            raise WorkflowException(
                "DockerRequirement: give dockerPull (or dockerImageId) to name the image"
            )
        return str(image)

    def create_runtime(
        self, env: MutableMapping[str, str], runtime_context: RuntimeContext
    ) -> tuple[list[str], str | None]:
        """cwltool's command line; its --cpus/--memory are always the job's here, so its
        warning that they are skipped without --strict-*-limit would be wrong."""
        runtime_context.strict_cpu_limit = runtime_context.strict_memory_limit = True
        return super().create_runtime(env, runtime_context)  # type: ignore[safe-super]

    def _argv(
        self, command: list[str], env: dict[str, str], stdin: str | None, prepared: Prepared
    ) -> list[str]:
        runtime_len = len(command) - len(self.command_line)
        runtime, tool = command[:runtime_len], command[runtime_len:]
        if not self.user_space:
            runtime = runtime_with_limits(runtime, prepared.request.cpus, prepared.request.memory)
        docker, _ = self.get_requirement("DockerRequirement")
        pulled = (docker or {}).get("dockerPull")
        # Only what cwltool added to this process's environment for the runtime.
        added = {k: v for k, v in env.items() if os.environ.get(k) != v}
        return container_argv(
            _stdin_wrapped(runtime + tool, stdin),
            exe=runtime[0],
            image=runtime[-1],
            pull=None if pulled is None else str(pulled),
            env=added,
            user_space=self.user_space,
        )

    def _execute(
        self,
        runtime: list[str],
        env: Any,
        runtimeContext: RuntimeContext,
        monitor_function: Any = None,
    ) -> None:
        # cwltool's docker_monitor watches a local subprocess; the backend measures instead.
        self.user_space = bool(runtimeContext.user_space_docker_cmd)
        super()._execute(runtime, env, runtimeContext, None)

    def _after(self, runtime: list[str], context: RuntimeContext) -> None:
        # cwltool's monitor removes the --cidfile it asked for unless --cidfile-dir kept it.
        if context.cidfile_dir:
            return
        for flag in runtime:
            if flag.startswith("--cidfile="):
                # never written when the container did not start
                with contextlib.suppress(OSError):
                    os.unlink(flag.removeprefix("--cidfile="))
