"""A cwltool job's files through S3, for a backend that has none of this machine's files
(ECS, AWS Batch, or the cloud candidate of a routing backend): the staged inputs and the
job script go up before it is submitted, its outputs come back after it ends.

What is staged is read from cwltool's own path mappers (``self.pathmapper``,
``self.generatemapper``: cwltool/pathmapper.py ``MapperEnt``, whose ``resolved`` holds the
text of a ``CreateFile`` entry); the S3 side is :class:`~cwltool_seqera._staging.S3Staging`.
"""

from __future__ import annotations

import logging
import os
import tarfile
from collections.abc import Callable

import attrs
from cwltool.errors import WorkflowException
from cwltool.job import JobBase

from seqera_core.backends import JobSpec, JobState, JobStatus
from seqera_core.pipeline import Prepared

from ._staging import S3JobFiles, S3Staging, StagingError

__all__ = ["S3StagedJob"]

_log = logging.getLogger("cwltool")
_CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class S3StagedJob(JobBase):
    """A mixin over cwltool's job classes: a job's files up to S3 and its outputs back
    (``_job.DispatchingJob`` extends it and decides when)."""

    def _stageable(self, runtime: list[str], image: str | None) -> bool:
        """Whether the job's files can travel through S3 for a cloud backend: the tool
        runs on its own (no container runtime or MPI runner in front of it; the cloud's
        task is the container) and an image is known for it (``image``: the run's own, for
        tools without a DockerRequirement)."""
        docker, _ = self.get_requirement("DockerRequirement")
        return not runtime and bool((docker or {}).get("dockerPull") or image)

    def _staged_form(
        self,
        staging: S3Staging,
        image: str | None,
        prepared: Prepared,
        command: list[str],
        env: dict[str, str],
        key: str,
        into: list[S3JobFiles],
    ) -> Callable[[], JobSpec]:
        """The job's staged form, built (inputs uploaded) only when the routing backend
        sends it to a backend without this machine's files; ``into`` gets its files."""

        def build() -> JobSpec:
            files, spec = self._through_s3(staging, image, prepared, command, env, key)
            into.append(files)
            return spec

        return build

    def _through_s3(
        self,
        staging: S3Staging,
        image: str | None,
        prepared: Prepared,
        command: list[str],
        env: dict[str, str],
        key: str,
    ) -> tuple[S3JobFiles, JobSpec]:
        """Upload the staged inputs and the job script; the spec runs the script's bootstrap
        in the tool's dockerPull image, else in ``image`` (the run's)."""
        docker, _ = self.get_requirement("DockerRequirement")
        pulled = (docker or {}).get("dockerPull")
        image = str(pulled) if pulled else image
        if not image:
            raise WorkflowException(
                f"[job {self.name}] ECS and AWS Batch run every job in a container image: give "
                "the tool a DockerRequirement with dockerPull, or pass --seqera-image"
            )
        files = staging.job(key)
        # target (the path the command line names) -> where its content is on this machine
        paths: dict[str, str] = {self.outdir: self.outdir}
        contents: dict[str, str] = {}
        for mapper in (self.pathmapper, self.generatemapper):
            for _, entry in mapper.items() if mapper is not None else ():
                if not entry.staged:
                    continue  # inside a staged directory, which carries it
                local = entry.resolved.removeprefix("file://")
                if os.path.exists(entry.target):  # cwltool staged it here (a symlink)
                    paths[entry.target] = entry.target
                elif entry.type in ("CreateFile", "CreateWritableFile"):
                    contents[entry.target] = entry.resolved  # resolved holds the text
                elif os.path.exists(local):
                    paths[entry.target] = local
        staging.upload_inputs(files, paths, contents)
        # The host's PATH means nothing in the image: the usual directories instead.
        env = {**env, "PATH": _CONTAINER_PATH}
        argv = ["env", "-i", "--", *(f"{k}={v}" for k, v in env.items()), *command]
        bootstrap = staging.write_script(
            files, command=argv, outdir=self.outdir, tmpdir=self.tmpdir, stdin=self.stdin
        )
        request = attrs.evolve(prepared.request, container=prepared.request.container or image)
        # workdir: where the bootstrap runs the command inside the image (the same absolute
        # path); the run's ledger keeps it, so a rerun with --cachedir adopts the job
        spec = JobSpec(name=self.name, command=bootstrap, request=request, workdir=self.outdir,
                       labels=prepared.labels)  # fmt: skip
        return files, spec

    def _fetch(
        self, staging: S3Staging, files: S3JobFiles, result: JobStatus, stdout: str, stderr: str
    ) -> bool:
        """Bring the outputs home; False (with the reason logged) when they are missing."""
        try:
            staging.download_outputs(files, self.outdir, stdout, stderr)
        except (StagingError, OSError, tarfile.TarError) as err:
            level = logging.ERROR if result.state is JobState.SUCCEEDED else logging.INFO
            _log.log(level, "[job %s] %s", self.name, err)
            return False
        return True
