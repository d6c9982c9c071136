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
- :func:`tracks_allocation`: in the history, a run given a much larger allocation than
  runs of about the same input used nearly all of it (85 %: a JVM's heap plus its own
  overhead), and far more than those runs did; an ordinary retry uses what it needs.

Detection is deliberately one-sided: a false alarm costs the margin the user declared,
a miss costs failed tasks.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

__all__ = ["read_source", "references_memory", "tracks_allocation"]

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


def tracks_allocation(
    runs: Sequence[tuple[int | None, float, float | None]],
    *,
    step: float = 1.5,
    share: float = 0.85,
    evidence: int = 1,
) -> bool:
    """Whether peaks follow allocations in ``runs`` of successful attempts, each
    ``(input_bytes, peak, allocation)``.

    They do when ``evidence`` runs used ``share`` of their allocation or more and peaked
    ``step`` x higher than every run of about the same input (within 25 %; any input
    where a size is unknown) given ``step`` x less, two such runs at least (where fewer
    are that near, the nearest on either side within a factor of two). One is enough by
    default: a run that used most of twice its neighbours' allocation and twice their
    peak is what a tool sized from its allocation shows after one retry (nf-core/eager's
    MarkDuplicates, 17.2 GB then 32 of 34.4), and the guard is one-sided (see the
    module): a false alarm costs the margin the user declared, a miss a shrunk JVM.
    """
    sized = sorted(
        (math.log(max(x, 1)) if x is not None else math.inf, peak, given)
        for x, peak, given in runs
        if given
    )
    if len(sized) < evidence + 2:
        return False
    least = min(given for _, _, given in sized)
    found = 0
    for key, peak, given in sized:
        if given < least * step or peak < share * given:
            continue
        # the runs given ``step`` x less: those of about the same input, or where fewer
        # than two are that near (a dozen runs are sparse), the nearest on either side
        # within a factor of two: a larger input that used far less is what use that
        # grows with the input (however fast) cannot show
        smaller = [(k, p) for k, p, g in sized if g * step <= given]
        if key == math.inf:
            near = [p for _, p in smaller]
        else:
            near = [p for k, p in smaller if abs(k - key) <= _NEAR or k == math.inf]
            if len(near) < 2:
                below = [(key - k, p) for k, p in smaller if 0 < key - k <= _FAR]
                above = [(k - key, p) for k, p in smaller if 0 <= k - key <= _FAR]
                near = [min(below)[1], min(above)[1]] if below and above else []
        if len(near) >= 2 and peak >= step * max(near):
            found += 1
            if found >= evidence:
                return True
    return False
