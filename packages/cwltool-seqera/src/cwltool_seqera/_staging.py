"""ECS jobs have no shared filesystem: their inputs and outputs travel through S3.

For each job, this side packs what cwltool staged (the pathmapper's targets, the output
directory with any InitialWorkDir files) into ``inputs.tar`` under
``s3://BUCKET/PREFIX/<run>/<job>/``, and writes ``job.sh``: a POSIX shell script that
downloads and unpacks the inputs at the same absolute paths, runs the command there, and
uploads the output directory and the command's stdout and stderr. The task's own command
is a short bootstrap that fetches ``job.sh``, so the container overrides stay far below
ECS's 8 KiB limit whatever the command line or environment.

The container reaches S3 through presigned URLs (GET for what it reads, PUT for what it
writes), so it needs no AWS credentials or CLI of its own: only ``sh``, ``tar`` and
``curl`` (or GNU ``wget``). The URLs live at most ``expires`` seconds, and no longer than
the credentials that signed them.
"""

from __future__ import annotations

import io
import logging
import os
import shlex
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from seqera_core.errors import ResourceError, SeqeraError

__all__ = ["BOOTSTRAP", "S3JobFiles", "S3Staging", "StagingError"]

_log = logging.getLogger("cwltool")

# The task's command: fetch job.sh with whichever client the image has, then run it.
BOOTSTRAP = (
    'if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 5 -o /tmp/.seqera-job.sh "$1"; '
    'else wget -q -O /tmp/.seqera-job.sh "$1"; fi && exec /bin/sh /tmp/.seqera-job.sh'
)

# Helpers of job.sh: one download and one upload function over curl or GNU wget.
_SCRIPT_HEAD = """\
set -u
if command -v curl >/dev/null 2>&1; then
  get() { curl -fsSL --retry 5 -o "$2" "$1"; }
  put() { curl -fsS --retry 5 -X PUT -T "$2" "$1" >/dev/null; }
else
  get() { wget -q -O "$2" "$1"; }
  put() { wget -q --method=PUT --body-file="$2" -O /dev/null "$1"; }
fi
fail() { echo "cwltool-seqera: $*" >&2; exit 1; }
"""


class StagingError(SeqeraError):
    """An object could not be written to or read from the S3 prefix."""


@frozen
class S3JobFiles:
    """Where one job's objects live: ``s3://bucket/key/...``."""

    bucket: str
    key: str

    def object(self, name: str) -> str:
        """The key of one of the job's objects."""
        return f"{self.key}/{name}"


def _location(prefix: str) -> tuple[str, str]:
    if not prefix.startswith("s3://"):
        raise ResourceError("--seqera-s3-prefix", prefix, "s3://BUCKET[/PREFIX]")
    bucket, _, key = prefix[5:].partition("/")
    if not bucket:
        raise ResourceError("--seqera-s3-prefix", prefix, "s3://BUCKET[/PREFIX]")
    return bucket, key.strip("/")


def _arcname(path: str) -> str:
    # Members unpack under / in the container: the same absolute paths as here.
    return os.path.normpath(path).lstrip("/")


class S3Staging:
    """Moves ECS jobs' files through one S3 prefix; one instance per run (thread-safe:
    boto3 clients may be shared between threads)."""

    def __init__(self, prefix: str, *, client: Any = None, expires: int = 7 * 24 * 3600) -> None:
        self.bucket, self.base = _location(prefix)
        self.expires = expires
        if client is None:
            import boto3  # only ECS runs need it (seqera-core[ecs])

            # boto3's standard chain: credentials, region and AWS_ENDPOINT_URL as configured.
            client = boto3.client("s3")
        self.s3 = client

    def job(self, key: str) -> S3JobFiles:
        """The objects of the job sent under submission ``key`` (``jobs/KEY`` under the
        prefix): the same in every run, so a run that adopts a dead run's job finds its
        outputs (the key names the job's output directory and attempt)."""
        return S3JobFiles(self.bucket, f"{self.base}/jobs/{key}" if self.base else f"jobs/{key}")

    def _url(self, method: str, key: str) -> str:
        url: str = self.s3.generate_presigned_url(
            method, Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=self.expires
        )
        return url

    def _put(self, key: str, body: Any) -> None:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)
        except Exception as err:  # botocore's ClientError and transport errors alike
            raise StagingError(f"could not write s3://{self.bucket}/{key}: {err}") from err

    def upload_inputs(
        self, files: S3JobFiles, paths: Mapping[str, str], contents: Mapping[str, str]
    ) -> None:
        """Pack ``paths`` (target -> local source, followed through symlinks) and the
        literal ``contents`` (target -> text) into ``inputs.tar`` at the targets' absolute
        paths, and upload it."""
        with tempfile.TemporaryFile() as buffer:
            with tarfile.open(fileobj=buffer, mode="w", dereference=True) as archive:
                added: list[str] = []
                for target in sorted(paths):
                    name = _arcname(target)
                    if any(name == a or name.startswith(a + "/") for a in added):
                        continue  # already inside a directory that was packed
                    archive.add(paths[target], arcname=name)
                    added.append(name)
                for target, text in contents.items():
                    data = text.encode()
                    info = tarfile.TarInfo(_arcname(target))
                    info.size = len(data)
                    info.mode = 0o644
                    archive.addfile(info, io.BytesIO(data))
            buffer.seek(0)
            self._put(files.object("inputs.tar"), buffer)

    def write_script(
        self,
        files: S3JobFiles,
        *,
        command: Sequence[str],
        outdir: str,
        tmpdir: str,
        stdin: str | None,
    ) -> list[str]:
        """Upload ``job.sh`` for one job; returns the task's command (the bootstrap)."""
        q = shlex.quote
        url = {
            name: q(self._url(method, files.object(name)))
            for name, method in (
                ("inputs.tar", "get_object"),
                ("outputs.tar", "put_object"),
                ("stdout", "put_object"),
                ("stderr", "put_object"),
            )
        }
        work = f"/tmp/.seqera-{os.path.basename(files.key)}"
        redirect = f" < {q(stdin)}" if stdin is not None else " < /dev/null"
        lines = [
            _SCRIPT_HEAD,
            f"work={q(work)}",
            'mkdir -p "$work" || fail "cannot create $work"',
            f'get {url["inputs.tar"]} "$work/inputs.tar" || fail "could not download the inputs"',
            'tar -xof "$work/inputs.tar" -C / || fail "could not unpack the inputs"',
            f"mkdir -p {q(outdir)} {q(tmpdir)}",
            f"cd {q(outdir)} || fail 'no output directory'",
            f'{shlex.join(command)}{redirect} > "$work/stdout" 2> "$work/stderr"',
            "code=$?",
            f'tar -cf "$work/outputs.tar" -C {q(outdir)} . || fail "could not pack the outputs"',
            f'put {url["outputs.tar"]} "$work/outputs.tar" || fail "could not upload the outputs"',
            f'put {url["stdout"]} "$work/stdout" || fail "could not upload stdout"',
            f'put {url["stderr"]} "$work/stderr" || fail "could not upload stderr"',
            'exit "$code"',
        ]
        self._put(files.object("job.sh"), "\n".join(lines) + "\n")
        return ["/bin/sh", "-c", BOOTSTRAP, "cwltool-seqera", self._url(
            "get_object", files.object("job.sh")
        )]  # fmt: skip

    def _get(self, key: str, target: Any) -> None:
        try:
            self.s3.download_fileobj(self.bucket, key, target)
        except Exception as err:
            raise StagingError(
                f"could not read s3://{self.bucket}/{key} (did the job upload it?): {err}"
            ) from err

    def download_outputs(self, files: S3JobFiles, outdir: str, stdout: str, stderr: str) -> None:
        """Unpack the job's ``outputs.tar`` into ``outdir``; write its stdout and stderr."""
        with tempfile.TemporaryFile() as buffer:
            self._get(files.object("outputs.tar"), buffer)
            buffer.seek(0)
            with tarfile.open(fileobj=buffer, mode="r") as archive:
                # The "data" filter refuses absolute paths, links out of outdir and devices.
                archive.extractall(outdir, filter="data")
        for name, path in (("stdout", stdout), ("stderr", stderr)):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as target:
                self._get(files.object(name), target)

    def remove(self, files: S3JobFiles) -> None:
        """Delete the job's objects (best effort: a leftover is only storage)."""
        try:
            listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=files.key + "/")
            keys = [{"Key": item["Key"]} for item in listed.get("Contents") or []]
            if keys:
                self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})
        except Exception as err:  # a leftover is only storage: say so and go on
            _log.warning("could not remove s3://%s/%s/: %s", self.bucket, files.key, err)
