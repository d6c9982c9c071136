"""Tools that size themselves from their allocation, which a right-sizer must not shrink.

A JVM started with ``-Xmx`` from the task's memory, ``sort -S``, a ``--max-mem`` option
or anything else handed the allocation grows into what it is given: its measured peak
follows the allocation, so the history cannot tell what a smaller one would have used,
and shrinking it makes it fail or crawl. Two ways to tell:

- :func:`references_memory`: the command, script or tool description references the
  memory value the engine hands the task: Snakemake's ``{resources.mem_mb}`` (any
  ``resources.mem*`` in a shell command, a ``run:`` block or a ``script:``, whose
  ``snakemake`` object reads it as Python ``snakemake.resources.mem_mb``, R
  ``snakemake@resources[["mem_mb"]]`` or Bash ``${snakemake_resources[mem_mb]}``,
  snakemake/script/__init__.py; or a ``params`` function that takes ``resources``,
  snakemake/rules.py ``apply_input_function``), Nextflow's ``task.memory``
  (TaskConfig.getMemory), CWL's ``runtime.ram`` (CWL v1.2 §Runtime environment), a
  scheduler's own variable (Slurm's ``SLURM_MEM_PER_NODE``/``SLURM_MEM_PER_CPU``,
  sbatch(1) OUTPUT ENVIRONMENT VARIABLES) or a JVM sized as a share of its container's
  limit (``-XX:MaxRAMPercentage``, JDK-8186248).
- :func:`tracked_at`: in the history, first attempts of about the same input given
  clearly different allocations used clearly different amounts, in proportion, more
  than once and three times for each that did not (a JVM's heap plus its own overhead uses 85 % or
  more of what it is given). Such a process keeps the largest allocation it was seen
  following, not necessarily what it declared; runs given that since which use what
  the others did take the flag back.

The command-text rule stays one-sided (a false alarm costs the margin the user
declared); the history rule needs evidence, because its false alarm is not cheap: a
tightly sized process whose one outlier was retried looks exactly like a tool sized
from its allocation, and was given its declared size for good (issue 31: 330 GB-h
where the per-process maximum wasted 17).
"""

from __future__ import annotations

import inspect
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = ["Observed", "read_source", "references_memory", "tracked_at", "tracks_allocation"]

# Of the runs given clearly more that say either way, this many follow for one that does
# not: a tool sized from its allocation follows nearly every time, while a model that
# predicts its peaks well gives more to the tasks that need more, half of which then use
# most of it (eager's MarkDuplicates replayed: 3 such against 2 given as much that did not).
_MOSTLY = 3
_NEAR = math.log(1.25)  # inputs within 25 % are "about the same"
_FAR = math.log(2)  # past twice or half the input, a run says nothing of another

_REFERENCES = re.compile(
    r"""resources\s*(?:\.|\[\[?\s*["']?|\.get\(\s*["'])mem  # Snakemake: resources.mem_mb
      | \btask\s*\.\s*memory\b                           # Nextflow: task.memory
      | \bruntime\s*(?:\.\s*ram\b|\[\s*["']ram["'])      # CWL: runtime.ram
      | \bSLURM_MEM_PER_(?:NODE|CPU)\b                   # Slurm's job environment
      | -XX:(?:Max|Initial|Min)RAM(?:Percentage|Fraction) # a JVM sized from its cgroup
    """,
    re.VERBOSE,
)


# A script longer than this is not a script a rule runs: read no further.
_SOURCE_LIMIT = 1 << 20


def read_source(path: str | Path) -> str | None:
    """The text of a script a task runs (its first MiB), or ``None`` when it cannot be
    read here (remote, missing, not text): then only the command is checked."""
    try:
        with open(path, "rb") as stream:
            return stream.read(_SOURCE_LIMIT).decode("utf-8", errors="replace")
    except (OSError, ValueError, TypeError):
        return None


def _takes_resources(function: Callable[..., object]) -> bool:
    try:
        return "resources" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def references_memory(*sources: object) -> bool:
    """Whether any source (text, or mappings/sequences of them, or functions) hands the
    task's memory allocation to the tool. Walks nested mappings and sequences; a function
    counts when it takes a ``resources`` argument (how Snakemake passes the job's
    resources to ``params`` functions)."""
    stack: list[object] = list(sources)
    seen = 0
    while stack and seen < 10_000:  # a bound: a tool description is never that large
        seen += 1
        item = stack.pop()
        if isinstance(item, str):
            if _REFERENCES.search(item):
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, bytes | bytearray):
            continue
        elif isinstance(item, Iterable):
            stack.extend(item)
        elif callable(item) and _takes_resources(item):
            return True
    return False


class Observed(NamedTuple):
    """One successful attempt as the guard reads it."""

    input_bytes: int | None
    peak: float
    allocation: float | None
    # a first attempt (a retry's allocation was raised because the task needed more)
    first: bool = True


def tracked_at(
    runs: Sequence[Observed | tuple[int | None, float, float | None]],
    *,
    step: float = 1.5,
    share: float = 0.85,
    proportion: float = 0.75,
    evidence: int = 2,
    retries: bool = False,
) -> float | None:
    """The allocation a process whose peaks follow its allocations keeps: the largest it
    was seen tracking at (the allocation of the runs the followers were compared with: it
    ran there, and used more only when given more), or ``None`` when ``runs``
    (successful attempts, oldest first) do not show that.

    A run *follows* when, against the runs of about the same input (within
    25 %; any input where a size is unknown; where fewer than two are that near, the
    nearest on either side within a factor of two) given ``step`` x less, it used
    ``share`` of its allocation or more, ``step`` x their largest peak or more, and in
    proportion (the ratio of peaks within ``proportion`` of the ratio of allocations,
    either way). One given ``step`` x more that used less than sqrt(``step``) x their
    peak does *not* follow. Peaks follow allocations when ``evidence`` runs follow (a
    single one is never enough: a tightly sized outlier looks just like it) and three
    follow for each that does not (a model that predicts peaks gives more to the tasks
    that need more, and those then use most of it), so a flag is taken back once the
    runs given the larger allocation since use what the others did.

    Retries are no evidence unless asked (``retries``): a retry is a task that was
    killed, chosen for needing more than its first allocation, so it uses more than its
    neighbours at about the same input whether or not the tool follows its allocation,
    and lands near its raised allocation whenever its need lies in the top of the step
    (nf-core/eager's MarkDuplicates: 32 GB of 34.4 after a kill at 17.2 shows a task
    that needed over 17.2 as much as a JVM sized from task.memory). First attempts are
    given what the model chose before the task ran, so their allocations say nothing of
    their need: only those can show a peak following an allocation. A replay, whose
    peaks cannot follow the allocations it chose, is then flagged only by chance twice
    over and against every run given more that did not follow (``seqera-sidecar
    evaluate`` counts it: none on the three traces, seeds 0-5, both protocols).
    """
    sized = sorted(
        (_log(run[0]), run[1], run[2], index)
        for index, run in enumerate(runs)
        if run[2] and (retries or len(run) < 4 or run[3])
    )
    if len(sized) < evidence + 2:
        return None
    least = min(given for _, _, given, _ in sized)
    keys = [key for key, _, _, _ in sized]
    unknown = [(p, g) for k, p, g, _ in sized if k == math.inf]
    follows: list[float] = []
    against = 0
    for key, peak, given, _ in sized:
        if given < least * step:
            continue
        near = _near(sized, keys, unknown, key, given / step)
        if len(near) < 2:
            continue
        top = max(p for p, _ in near)
        ratio, given_ratio = peak / top, given / max(g for _, g in near)
        if (peak >= share * given and ratio >= step
                and proportion <= ratio / given_ratio <= 1 / proportion):  # fmt: skip
            follows.append(max(g for _, g in near))
        elif ratio < math.sqrt(step):
            against += 1
    if len(follows) >= evidence and len(follows) >= _MOSTLY * against:
        return max(follows)
    return None


def tracks_allocation(
    runs: Sequence[Observed | tuple[int | None, float, float | None]], **options: float
) -> bool:
    """Whether peaks follow allocations in ``runs`` (see :func:`tracked_at`)."""
    return tracked_at(runs, **options) is not None  # type: ignore[arg-type]


def _log(input_bytes: int | None) -> float:
    return math.log(max(input_bytes, 1)) if input_bytes is not None else math.inf


def _near(
    sized: list[tuple[float, float, float, int]],
    keys: list[float],
    unknown: list[tuple[float, float]],
    key: float,
    most: float,
) -> list[tuple[float, float]]:
    """(peak, allocation) of the runs given ``most`` or less of about input ``key``: those
    within 25 % (and those of unknown input), or where fewer than two are that near (a
    dozen runs are sparse), the nearest on either side within a factor of two: a larger
    input that used far less is what use that grows with the input (however fast) cannot
    show."""
    if key == math.inf:
        return [(p, g) for _, p, g, _ in sized if g <= most]
    low, high = bisect_left(keys, key - _FAR), bisect_right(keys, key + _FAR)
    window = [(k, p, g) for k, p, g, _ in sized[low:high] if g <= most]
    near = [(p, g) for k, p, g in window if abs(k - key) <= _NEAR]
    near += [(p, g) for p, g in unknown if g <= most]
    if len(near) >= 2:
        return near
    below = [(key - k, p, g) for k, p, g in window if key - k > 0]
    above = [(k - key, p, g) for k, p, g in window if k - key >= 0]
    if not (below and above):
        return []
    return [min(below)[1:], min(above)[1:]]
