"""What a container job used: its peak memory, which neither DescribeTasks (ECS) nor
DescribeJobs (AWS Batch) reports.

The job's command runs under a short POSIX ``sh`` wrapper that, when the command ends,
writes the container's own high-water mark (cgroup v2 ``memory.peak``, else v1
``memory.max_usage_in_bytes``: the container is its own cgroup) and the CPU time it used
(v2 ``cpu.stat`` ``usage_usec``, else v1 ``cpuacct.usage`` in nanoseconds; see the
kernel's Documentation/admin-guide/cgroup-v2.rst) to stderr as one line,
``seqera-usage peak_memory_bytes=N cpu_usec=M`` (``cpu_usec`` only where a file says).
The awslogs driver carries it to CloudWatch Logs, where one FilterLogEvents per 100
finished jobs finds it again (``_logs``). The wrapper forwards SIGTERM (StopTask,
TerminateJob) to the command and exits with its status, so stopping, exit codes and stdin
behave as without it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MARKER", "WRAPPER", "parse_cpu", "parse_usage", "wrapped"]

MARKER = "seqera-usage"

# sh runs the command as a child (not exec) so it can read the peak once it has ended.
# An asynchronous command's stdin is /dev/null, so the wrapper's own stdin goes to it on
# fd 3; and sh as PID 1 would ignore StopTask's SIGTERM without the trap.
WRAPPER = f"""\
exec 3<&0
"$@" <&3 3<&- &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
status=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
cpu=
if [ -r /sys/fs/cgroup/cpu.stat ]; then
  while read -r key value; do [ "$key" = usage_usec ] && cpu=" cpu_usec=$value"; done \
    < /sys/fs/cgroup/cpu.stat
elif [ -r /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
  read -r nanoseconds < /sys/fs/cgroup/cpuacct/cpuacct.usage
  cpu=" cpu_usec=$((nanoseconds / 1000))"
fi
for file in /sys/fs/cgroup/memory.peak /sys/fs/cgroup/memory/memory.max_usage_in_bytes; do
  if [ -r "$file" ]; then
    echo "{MARKER} peak_memory_bytes=$(cat "$file")$cpu" >&2
    break
  fi
done
exit "$status"
"""

_LINE = re.compile(rf"{MARKER} peak_memory_bytes=(\d+)(?: cpu_usec=(\d+))?\s*$")


def wrapped(command: Sequence[str]) -> list[str]:
    """The container command that runs ``command`` and reports its peak memory."""
    return ["sh", "-c", WRAPPER, MARKER, *command]


def parse_usage(message: str) -> int | None:
    """The peak memory in bytes a wrapper's log line reports, or ``None`` for any other line."""
    found = _LINE.search(message)
    return int(found.group(1)) if found else None


def parse_cpu(message: str) -> float | None:
    """The CPU seconds a wrapper's log line reports, or ``None`` (another line, or a
    container whose cgroup did not say)."""
    found = _LINE.search(message)
    return None if found is None or found.group(2) is None else int(found.group(2)) / 1e6
