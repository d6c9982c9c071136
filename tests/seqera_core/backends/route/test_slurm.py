"""The Slurm probe's parsers on output captured from the project's one-node Slurm
(tests/integration/slurm/slurm-up.sh, 16 CPUs, Slurm 23.11 from Debian): two 8-core jobs
running, a 4-core and a 16-core one pending, captured at 2026-11-27T11:04:57."""

from __future__ import annotations

from datetime import datetime

from seqera_core.backends.route import start_after
from seqera_core.backends.route._slurm import parse_limits, parse_load
from seqera_core.units import MIB

IDLE = "localhost|debug*|16|24105|idle|0/16/0/16|infinite|(null)\n"
BUSY = "localhost|debug*|16|24105|alloc|16/0/0/16|infinite|(null)\n"
SQUEUE = """\
4|debug|PENDING|4|10:00|10:00|2026-11-27T11:09:55
5|debug|PENDING|16|3:00|3:00|2026-11-27T11:19:00
2|debug|RUNNING|8|4:58|5:00|2026-11-27T11:04:55
3|debug|RUNNING|8|4:58|5:00|2026-11-27T11:04:55
"""
NOW = datetime.fromisoformat("2026-11-27T11:04:57").timestamp()


def test_limits_of_the_default_partition() -> None:
    limits = parse_limits(IDLE, None)
    assert limits is not None
    assert (limits.cpus, limits.memory, limits.walltime, limits.gpus) == (16, 24105 * MIB, None, 0)
    assert limits.queues == ("debug",)
    assert parse_limits(IDLE, "gpu") is None


def test_gpus_and_time_limits_from_sinfo() -> None:
    text = (
        "g1|gpu|32|257000|mix|8/24/0/32|2-00:00:00|gpu:a100:4(S:0-1)\n"
        "g2|gpu|32|257000|down*|0/0/32/32|2-00:00:00|gpu:a100:4(S:0-1)\n"
        "c1|cpu*|64|515000|idle|0/64/0/64|1-00:00:00|(null)\n"
    )
    limits = parse_limits(text, "gpu")
    assert limits is not None
    assert (limits.cpus, limits.gpus, limits.walltime) == (32, 4, 2 * 86400)
    assert limits.queues == ("gpu", "cpu")
    assert parse_load(text, "", "gpu", NOW).free == 24  # the down node counts for nothing


def test_load_of_a_full_partition() -> None:
    load = parse_load(BUSY, SQUEUE, None, NOW, overhead=5)
    assert load.free == 0
    assert sorted(load.releases) == [(298, 8), (298, 8)]  # 4:58 left each
    assert load.queued == ((4, 600), (16, 180))  # in id order, for their time limits
    # the scheduler expects the 16-core job to start at 11:19:00, 843 s from now
    assert load.not_before == 843
    # first come, first served: the 4-core job at 298 s (to 898), the 16-core one when it
    # ends (to 1078), then a new job, after the overhead
    assert start_after(load, 1) == 1078 + 5


def test_own_jobs_count_for_their_expected_time() -> None:
    load = parse_load(BUSY, SQUEUE, None, NOW, own={"2": 10.0, "4": 30.0})
    assert sorted(load.releases) == [(10, 8), (298, 8)]
    assert load.queued[0] == (4, 30)


def test_an_idle_partition_takes_a_job_at_once() -> None:
    load = parse_load(IDLE, "", None, NOW, overhead=5)
    assert (load.free, load.not_before, start_after(load, 16)) == (16, 0, 5)


def test_own_allocations_are_room_for_own_jobs() -> None:
    # a squashing candidate's allocation 7 holds the whole node and a second array of
    # its own waits; a foreign 4-core job waits too
    squeue = (
        "7|debug|RUNNING|16|59:58|1:00:00|2026-11-27T11:04:55\n"
        "8_[0-1]|debug|PENDING|16|1:00:00|1:00:00|N/A\n"
        "9|debug|PENDING|4|10:00|10:00|N/A\n"
    )
    foreign = parse_load(BUSY, squeue, None, NOW)
    assert foreign.free == 0 and foreign.releases == ((3598, 16),)  # held to its limit
    assert [cores for cores, _ in foreign.queued] == [16, 4]  # the array: one line
    own = parse_load(BUSY, squeue, None, NOW, pool={"7", "8_0"})
    assert own.free == 16 and own.releases == ()  # the caller serves its jobs on them
    assert own.queued == ((4, 600),)
