"""A batch job's directory: its script, outputs, exit-code file and submission key.

Every job gets a directory of its own under the backend's work directory, named
``<name>.<12 hex digits>``; the hex digits are the job's submission key (see
:func:`submission_key`), which the backend hands the scheduler so that, after an
ambiguous submission error, it can ask whether the job went through.

Safety: inside the generated script every value from the caller (command, working
directory, environment, labels) is quoted with :func:`shlex.quote`, its newlines spelled
as a variable, so no line of the script starts with caller text and none can become an
``#SBATCH``/``#PBS`` directive. The script records the command's exit code in the job
directory, so a job whose record the scheduler has already forgotten is not lost.

A caller's own submission key (``JobSpec.key``) is recorded under ``by-key/`` before the
job is sent (:class:`KeyRecord`): which directory (and, for an array element, which
array and index) it went out as, so a later process can ask the scheduler for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import uuid
from pathlib import Path

from attrs import frozen

from ...labels import env_name
from ..base import JobSpec

__all__ = [
    "EXIT_FILE",
    "STARTED_FILE",
    "JobFiles",
    "JobIndex",
    "KeyRecord",
    "job_environment",
    "job_labels",
    "job_script",
    "prepare_job",
    "shell_word",
    "started_id",
    "submission_key",
]

EXIT_FILE = "exitcode"
# The script's first act: append the scheduler's id for this run (an array's own id for an
# element), so a job that ran and left the scheduler's listing is still found by its
# directory after an ambiguous submission error (see _batch).
STARTED_FILE = "started"
# Grid Engine's JOB_ID is its job's (or array's) number: the last resort, a generic name;
# LSF's LSB_JOBID is its job's (or array's) number.
_RUN_ID = (
    "${SLURM_ARRAY_JOB_ID:-${PBS_ARRAY_ID:-${SLURM_JOB_ID:-${PBS_JOBID:-"
    "${LSB_JOBID:-${JOB_ID:-unknown}}}}}}"
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_NOT_FILE_NAME = re.compile(r"[^A-Za-z0-9._+-]", re.ASCII)
_KEY_PREFIX = "seqera-"


@frozen
class JobFiles:
    """Where one job's files live: its directory, script, outputs and exit-code file."""

    directory: Path
    script: Path
    stdout: Path
    stderr: Path

    @property
    def exit_file(self) -> Path:
        """The file the script writes the command's exit code to."""
        return self.directory / EXIT_FILE

    def forget_run(self) -> None:
        """Remove what a run left (exit code, start mark) before the job is sent again."""
        for name in (EXIT_FILE, STARTED_FILE):
            (self.directory / name).unlink(missing_ok=True)


def started_id(directory: Path) -> str | None:
    """The scheduler id the job (or any element of the array) in ``directory`` started
    under, or None if it has not started."""
    for mark in (directory / STARTED_FILE, *sorted(directory.glob(f"*.dir/{STARTED_FILE}"))):
        with contextlib.suppress(OSError):
            ids = mark.read_text().split()
            if ids and ids[-1] != "unknown":
                return ids[-1]
    return None


def submission_key(directory: Path, resubmission: int = 0) -> str:
    """The key of one submission of the job (or array) in ``directory``.

    ``seqera-<12 hex>`` from the directory's name, unique per job; a resubmission by the
    backend (after a node failure or preemption) is a new submission: ``-r<n>`` is added.
    """
    suffix = directory.name.rpartition(".")[2] or _NOT_FILE_NAME.sub("_", directory.name)
    key = f"{_KEY_PREFIX}{suffix}"
    return f"{key}-r{resubmission}" if resubmission else key


def prepare_job(work_dir: Path, spec: JobSpec) -> JobFiles:
    """A new directory for ``spec`` under ``work_dir``, with its script written.

    Raises:
        ValueError: the job cannot be written as a script (empty command, bad variable name).
    """
    stem = _NOT_FILE_NAME.sub("_", spec.name)[:60] or "job"
    directory = work_dir / f"{stem}.{uuid.uuid4().hex[:12]}"
    base = Path(spec.workdir) if spec.workdir else directory
    stdout = base / spec.stdout if spec.stdout else directory / "stdout"
    stderr = base / spec.stderr if spec.stderr else directory / "stderr"
    files = JobFiles(directory, directory / "job.sh", stdout, stderr)
    text = job_script(spec, files)  # before mkdir: a job that cannot be written leaves nothing
    directory.mkdir(parents=True)
    files.script.write_text(text)
    files.script.chmod(0o700)
    return files


@frozen
class KeyRecord:
    """Where the job with a caller's key went: its name, directory and output files and,
    for an element of an array, the array's directory and the element's index."""

    name: str
    directory: Path
    stdout: Path
    stderr: Path
    array: Path | None = None
    index: int = 0

    @property
    def sent_as(self) -> Path:
        """The directory whose key (:func:`submission_key`) the scheduler carries."""
        return self.array or self.directory


class JobIndex:
    """Which directory holds which native id: in memory, and as ``by-id`` links on disk
    so a later process (a resumed workflow) finds a job's exit code from its id alone;
    and, as ``by-key`` records, where each caller's submission key went."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self._dirs: dict[str, Path] = {}

    def _link(self, native_id: str) -> Path:
        return self.work_dir / "by-id" / _NOT_FILE_NAME.sub("_", native_id)

    def remember(self, native_id: str, directory: Path) -> None:
        """Record that ``native_id`` runs the job in ``directory``."""
        self._dirs[native_id] = directory
        link = self._link(native_id)
        with contextlib.suppress(OSError):
            link.parent.mkdir(exist_ok=True)
            link.unlink(missing_ok=True)
            link.symlink_to(directory)

    def _key_file(self, key: str) -> Path:
        # hashed: a caller's key may hold any character
        return self.work_dir / "by-key" / hashlib.sha256(key.encode()).hexdigest()[:40]

    def remember_key(self, key: str, record: KeyRecord) -> None:
        """Record where ``key``'s job goes; before it is sent (an error here sends nothing).

        Written then renamed, so a reader after a crash sees the old record or the new.
        """
        path = self._key_file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "key": key, "name": record.name, "directory": str(record.directory),
            "stdout": str(record.stdout), "stderr": str(record.stderr),
            "array": str(record.array) if record.array else None, "index": record.index,
        }  # fmt: skip
        partial = path.with_suffix(".part")
        partial.write_text(json.dumps(document))
        os.replace(partial, path)

    def keyed(self, key: str) -> KeyRecord | None:
        """Where ``key``'s job went, if this or an earlier process recorded it."""
        try:
            document = json.loads(self._key_file(key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(document, dict) or document.get("key") != key:
            return None
        array = document.get("array")
        return KeyRecord(
            str(document["name"]), Path(document["directory"]), Path(document["stdout"]),
            Path(document["stderr"]), Path(array) if array else None, int(document["index"]),
        )  # fmt: skip

    def directory(self, native_id: str) -> Path | None:
        """The job directory of ``native_id``, if this or an earlier process recorded it."""
        directory = self._dirs.get(native_id)
        if directory is None:
            link = self._link(native_id)
            directory = link.resolve() if link.is_dir() else None
        return directory

    def exit_code(self, native_id: str) -> int | None:
        """The exit code the job's script recorded, or None if it has not (yet)."""
        directory = self.directory(native_id)
        if directory is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            return int((directory / EXIT_FILE).read_text().strip())
        return None


def job_labels(spec: JobSpec) -> dict[str, str]:
    """The labels of a job: its request's, overridden by the spec's own."""
    return {**spec.request.labels, **spec.labels}


def shell_word(value: str) -> str:
    """:func:`shlex.quote`, but a newline becomes ``"$__seqera_nl"``: no line of the script
    can start with a caller's text, so none can look like a ``#SBATCH``/``#PBS`` directive."""
    if "\n" not in value:
        return shlex.quote(value)
    return '"$__seqera_nl"'.join(shlex.quote(part) for part in value.split("\n"))


def job_environment(spec: JobSpec) -> dict[str, str]:
    """The variables a job's script exports: its labels (as the local backend sets them),
    then its own environment."""
    variables = {env_name(k): v for k, v in job_labels(spec).items()}
    variables.update(spec.env)
    return variables


def job_script(spec: JobSpec, files: JobFiles) -> str:
    """The POSIX sh script for a job; every caller value is shell-quoted, none is in a comment.

    Raises:
        ValueError: an empty command, or an environment variable name a shell cannot set.
    """
    if not spec.command:
        raise ValueError(f"job {spec.name!r} has an empty command")
    lines = [
        "#!/bin/sh",
        "# Written by seqera-core. Scheduler options are given on the command line, not here.",
        # Some submitters start jobs with an empty environment (Debian's Torque qsub -v).
        'export PATH="${PATH:-/usr/local/bin:/usr/bin:/bin}"',
        f"printf '%s\\n' \"{_RUN_ID}\" >> {shell_word(str(files.directory / STARTED_FILE))}",
        "__seqera_nl='",
        "'",
    ]
    for name, value in job_environment(spec).items():
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"environment variable name {name!r} is not valid in a shell")
        lines.append(f"export {name}={shell_word(value)}")
    if spec.workdir:
        lines.append(f"cd {shell_word(spec.workdir)} || exit 1")
    exit_file = shell_word(str(files.exit_file))
    partial = shell_word(f"{files.exit_file}.part")
    lines += [
        # USR1/USR2 reach the command: a scheduler's warning before the time limit goes
        # to the batch shell (sbatch --signal=B:USR2@30, as Nextflow asks), whose default
        # action would end this script and lose the exit file while the command runs on.
        # A caught signal's trap is reset in the command (exec), so it gets the default.
        "trap 'kill -USR1 \"$__seqera_child\" 2>/dev/null' USR1",
        "trap 'kill -USR2 \"$__seqera_child\" 2>/dev/null' USR2",
        " ".join(shell_word(arg) for arg in spec.command) + " &",
        "__seqera_child=$!",
        'wait "$__seqera_child"',
        "status=$?",
        # a trapped signal ends wait early (status > 128): wait again for the real end
        'while kill -0 "$__seqera_child" 2>/dev/null; do wait "$__seqera_child"; status=$?; done',
        # Written then renamed, so a reader never sees half a number.
        f"printf '%s\\n' \"$status\" > {partial} && mv {partial} {exit_file}",
        'exit "$status"',
        "",
    ]
    return "\n".join(lines)
