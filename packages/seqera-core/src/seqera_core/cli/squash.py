"""``seqera squash``: a dry run of job squashing, which jobs would share an allocation and why.

JOBS.json is a list of jobs::

    [{"name": "trim-1", "cpus": 1, "memory": "300 MB", "time": "5m"},
     {"name": "align-1", "cpus": 4, "memory": "16 GiB", "time": "2h", "account": "lab"},
     {"name": "call-1", "memory": "2 GB", "time": "10m", "squash_key": "sample-1"}]

``memory`` is a size with a unit, ``time`` a duration (``90m``, ``01:30:00``); ``cpus``
(default 1), ``queue``, ``account`` and ``squash_key`` are optional. The policy is the
platform's ``squash:`` section with seqera config's ``squash.*`` keys and the flags over it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import platforms
from ..backends.base import JobSpec
from ..backends.squash import Decision, allocation_size, explain, shape
from ..dialects.human import parse_duration
from ..errors import ResourceError
from ..models import ResourceRequest
from ..planning.catalogue import parse_memory
from ..planning.jobsfile import entry as jobs_entry
from ..planning.jobsfile import parse_cpus, read_json
from ..squash import SquashMode, SquashPolicy
from ..units import format_bytes, format_seconds
from ._args import settings

__all__ = ["add_parser", "parse_jobs", "run"]

_KEYS = ("name", "cpus", "memory", "time", "queue", "account", "squash_key")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera squash``."""
    parser = commands.add_parser(
        "squash",
        help="dry run: which jobs would share a squashed allocation on Slurm or PBS, and why",
        description=(
            "Show what squashing would do with a list of jobs: the allocations (cores, "
            "memory, time limit) and the jobs in each, and every job that would run alone "
            "with the reason. JOBS.json is a list of {name, memory, time, cpus?, queue?, "
            "account?, squash_key?}."
        ),
    )
    parser.set_defaults(run=run)
    parser.add_argument("jobs", metavar="JOBS.json", help="the jobs")
    parser.add_argument("--platform", metavar="FILE", help="a platform with a squash: section")
    # As written: the config's squash.* keys read them, and a refusal quotes the value given
    # ("-0", not argparse's 0).
    parser.add_argument("--max-jobs", metavar="N", help="most jobs per allocation")
    parser.add_argument("--max-time", metavar="DURATION", help="longest allocation, e.g. 1h")
    parser.add_argument("--cpus", metavar="N", help="cores of an allocation")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _text(where: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ResourceError(where, value, "a non-empty string")
    return value


def _job(where: str, value: Any) -> JobSpec:
    value = jobs_entry(where, value, _KEYS, ("name", "memory", "time"))
    name = _text(f"{where}.name", value["name"])
    for field in ("memory", "time"):
        if not isinstance(value[field], str):
            raise ResourceError(f"{where}.{field}", value[field], "a string with a unit")
    squash_key = _text(f"{where}.squash_key", value.get("squash_key"))
    request = ResourceRequest(
        cpus=parse_cpus(f"{where}.cpus", value.get("cpus", 1)),
        memory=parse_memory(f"{where}.memory", value["memory"]),
        time=parse_duration(value["time"], f"{where}.time"),
        queue=_text(f"{where}.queue", value.get("queue")),
        account=_text(f"{where}.account", value.get("account")),
        labels={"squash_key": squash_key} if squash_key else {},
    )
    return JobSpec(str(name), ["true"], request)


def parse_jobs(document: Any, source: str = "<memory>") -> list[JobSpec]:
    """Jobs from a decoded JOBS.json (see the module's docstring)."""
    if not isinstance(document, list):
        raise ResourceError(source, type(document).__name__, "a JSON list of jobs")
    return [_job(f"{source}: jobs[{n}]", value) for n, value in enumerate(document)]


def _policy(args: argparse.Namespace) -> SquashPolicy:
    # The flags are the config's top layer: checked there, named as the keys they set.
    flags = {"squash.max_jobs": args.max_jobs, "squash.max_time": args.max_time,
             "squash.cpus": args.cpus}  # fmt: skip
    config = settings(platform=args.platform, **flags)
    path = config.get("platform")
    base = platforms.load(path).squash if path else SquashPolicy()
    policy = base.merged(config.section("squash"), "squash")
    if policy.mode is not SquashMode.SQUASH:  # this command is about squashing
        policy = policy.merged({"mode": "squash"})
    return policy


def run(args: argparse.Namespace) -> int:
    """Print the allocations and the jobs that run alone."""
    specs = parse_jobs(read_json(args.jobs), args.jobs)
    policy = _policy(args)
    decisions = explain(specs, policy)
    allocations = _allocations(specs, decisions, policy)
    alone = [{"job": d.job, "why": d.why} for d in decisions if d.how == "alone"]
    if args.json:
        print(json.dumps({"allocations": allocations, "alone": alone}, indent=2))
        return 0
    for a in allocations:
        print(
            f"allocation {a['allocation']}: {a['cpus']} cores, {format_bytes(a['memory'])}, "
            f"{format_seconds(a['time'])}: {len(a['jobs'])} jobs ({', '.join(a['jobs'])})"
        )
    for entry in alone:
        print(f"alone: {entry['job']}: {entry['why']}")
    print(
        f"{len(specs)} jobs: {len(allocations)} allocations and {len(alone)} jobs on their "
        f"own; squash: at most {policy.max_jobs} jobs and {format_seconds(policy.max_time)} "
        "per allocation"
    )
    return 0


def _allocations(
    specs: list[JobSpec], decisions: list[Decision], policy: SquashPolicy
) -> list[dict[str, Any]]:
    members: dict[int, list[JobSpec]] = {}
    for spec, decision in zip(specs, decisions, strict=True):
        if decision.allocation is not None:
            members.setdefault(decision.allocation, []).append(spec)
    result = []
    for number, jobs in sorted(members.items()):
        cpus, memory, limit = allocation_size(policy, [shape(j) for j in jobs])
        entry = {"allocation": number, "cpus": cpus, "memory": memory, "time": limit}
        result.append({**entry, "jobs": [j.name for j in jobs]})
    return result
