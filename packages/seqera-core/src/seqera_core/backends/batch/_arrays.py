"""Which jobs of one ``submit`` go out together as one job array, and the array's files.

Jobs share an array when the squash policy allows arrays and they would be submitted
alike (``squash.array_key``: same resources, queue and labels the scheduler sees), and
their stdout/stderr are kept the same way; at most ``max_jobs`` per array. Element N of
the array runs job N's own script in job N's own directory, so everything else
(exit-code file, start mark, outputs) is per job, as for a job sent alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Sequence
from pathlib import Path

import attrs

from ...squash import SquashPolicy, array_key
from ..base import JobSpec
from ._jobdir import JobFiles, job_labels, shell_word

__all__ = ["array_shape", "batches", "write_array"]


def batches(
    prepared: Sequence[tuple[JobSpec, JobFiles]], policy: SquashPolicy, arrays: bool
) -> list[list[int]]:
    """Which jobs go out together: lists of indices, in the order of their first job."""
    if not (arrays and policy.arrays):
        return [[n] for n in range(len(prepared))]
    groups: dict[Hashable, list[int]] = {}
    for n, (spec, files) in enumerate(prepared):
        if spec.request.multi_task:
            # an array's elements share one shape; a multi-task job goes out on its own
            groups[("alone", n)] = [n]
            continue
        key = (array_key(spec.request, job_labels(spec), policy), files.stdout == files.stderr)
        groups.setdefault(key, []).append(n)
    size = policy.max_jobs
    return [
        members[i : i + size] for members in groups.values() for i in range(0, len(members), size)
    ]


def array_shape(members: Sequence[tuple[JobSpec, JobFiles]]) -> tuple[JobSpec, bool]:
    """The spec the array is submitted as (the first job's, with only the labels every
    member shares and no working directory), and whether stdout and stderr are apart."""
    shared = dict(members[0][0].labels)
    for spec, _ in members[1:]:
        shared = {k: v for k, v in shared.items() if spec.labels.get(k) == v}
    first = attrs.evolve(members[0][0], labels=shared, workdir=None)
    return first, members[0][1].stdout != members[0][1].stderr


def write_array(
    work_dir: Path, members: Sequence[JobFiles], index_variable: str, first: int = 0
) -> JobFiles:
    """A directory and script for one array whose element ``first + N`` runs
    ``members[N]``'s script.

    The directory holds links named after each element's index (``N.dir``, ``N.out`` and,
    when stdout and stderr are apart, ``N.err``) so the scheduler's per-index output
    pattern lands in each job's own files. ``first`` is the scheduler's first index
    (Grid Engine's ``-t`` starts at 1).
    """
    directory = work_dir / f"array.{uuid.uuid4().hex[:12]}"
    directory.mkdir(parents=True)
    apart = members[0].stdout != members[0].stderr
    for index, files in enumerate(members, start=first):
        (directory / f"{index}.dir").symlink_to(files.directory)
        (directory / f"{index}.out").symlink_to(files.stdout)
        if apart:
            (directory / f"{index}.err").symlink_to(files.stderr)
    script = directory / "array.sh"
    here = shell_word(str(directory))
    element = f'"${{{index_variable}}}"'
    script.write_text(
        "#!/bin/sh\n"
        "# Written by seqera-core: element N of the array runs job N's own script.\n"
        f"cd {here}/{element}.dir || exit 1\n"
        f"exec {here}/{element}.dir/job.sh\n"
    )
    script.chmod(0o700)
    return JobFiles(directory, script, directory / "array.out", directory / "array.err")
