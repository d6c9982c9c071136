"""``seqera plan``: which instances to start for a set of jobs, and how far from the bound.

JOBS.json is a list of jobs::

    [{"name": "align-1", "cpus": 4, "memory": "16 GiB"},
     {"name": "call", "cpus": 2, "memory": 8000000000, "gpus": 1},
     {"name": "merge", "cpus": 1, "memory": "2 GB", "instance_type": "r7i.large"}]

``memory`` is a size with a unit (``4 GB`` = 10^9 bytes, ``4 GiB`` = 2^30) or whole
bytes; ``gpus`` and ``instance_type`` (a hint naming the type to use) are optional.
The catalogue is ``--catalogue FILE``, else the platform's instance types (its
``instances:``, or the queues of an ECS platform; ``--platform`` or seqera config),
else the dated EC2 example shipped with seqera.
"""

from __future__ import annotations

import argparse
import gc
import sys
from typing import Any

from .. import platforms
from ..planning import Instance, Plan, schedule
from ..planning import catalogue as catalogues
from ..planning.catalogue import Catalogue
from ..planning.jobsfile import parse_jobs, read_json
from ._args import settings
from ._planout import json_chunks, share, text, usage

__all__ = ["add_parser", "choose_catalogue", "plan_document", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera plan``."""
    plan = commands.add_parser(
        "plan",
        help="pack jobs onto cloud instances (CAVATICA algorithm) and show the cost",
        description=(
            "Place jobs on instances with Seven Bridges' multi-instance scheduling "
            "algorithm: the instances, which jobs go where, utilisation, the hourly cost "
            "and the lower bound on it. JOBS.json is a list of {name, cpus, memory, "
            'gpus?, instance_type?}; memory is a size such as "4 GB" or whole bytes.'
        ),
    )
    plan.set_defaults(run=run)
    plan.add_argument("jobs", metavar="JOBS.json", help="the jobs to place")
    plan.add_argument(
        "--catalogue", metavar="FILE", help="instance types and prices (YAML or JSON)"
    )
    plan.add_argument("--platform", metavar="FILE", help="a platform with an instances: section")
    plan.add_argument(
        "--lookahead",
        action="store_true",
        help=(
            "a variant, not the published algorithm: give each new instance the type that "
            "packs the most work per dollar on a trial fill"
        ),
    )
    plan.add_argument("--json", action="store_true", help="print one JSON object")


def choose_catalogue(catalogue: str | None, platform: str | None) -> Catalogue:
    """``--catalogue``, else the platform's instance types (``instances:``, or an ECS
    platform's queues), else the shipped EC2 example."""
    if catalogue:
        return catalogues.load(catalogue)
    own = platforms.load(platform).catalogue() if platform else None
    return own or catalogues.default()


def _instance_document(instance: Instance) -> dict[str, Any]:
    t = instance.type
    cpus, memory, gpus = usage(instance)
    return {
        "id": instance.id,
        "type": t.name,
        "hourly_price": t.price,
        "jobs": [j.name for j in instance.jobs],
        "used": {"cpus": cpus, "memory_bytes": memory, "gpus": gpus},
        "capacity": {"cpus": t.vcpus, "memory_bytes": t.memory, "gpus": t.gpus},
        "utilisation": {
            "cpus": share(cpus, t.vcpus),
            "memory": share(memory, t.memory),
            "gpus": share(gpus, t.gpus) if t.gpus else None,
        },
    }


def plan_document(plan: Plan, instances: bool = True) -> dict[str, Any]:
    """The plan as JSON-ready values (``instances=False``: an empty list of instances)."""
    bound = plan.lower_bound()
    cost = plan.hourly_cost
    return {
        "catalogue": {
            "source": plan.catalogue.source,
            "date": plan.catalogue.date,
            "description": plan.catalogue.description,
        },
        "jobs": sum(len(i.jobs) for i in plan.instances),
        "instances": [_instance_document(i) for i in plan.instances] if instances else [],
        "hourly_cost": cost,
        "lower_bound": {
            "hourly": bound.hourly,
            "dimension": bound.dimension,
            "per_dimension": dict(bound.per_dimension),
        },
        "cost_over_bound": cost / bound.hourly if bound.hourly else None,
    }


def run(args: argparse.Namespace) -> int:
    """Plan the jobs and print the plan."""
    # Planning 100,000 jobs makes about a million objects (jobs, demands, tree nodes,
    # rows), none of them garbage in a cycle; the cyclic collector would walk them all
    # again at each full pass, a fifth of the command's time. It is off while the
    # command reads, plans and writes, and on again after.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _plan(args)
    finally:
        if collecting:
            gc.enable()


def _plan(args: argparse.Namespace) -> int:
    config = settings(platform=args.platform)
    catalogue = choose_catalogue(args.catalogue, config.get("platform"))
    jobs = parse_jobs(read_json(args.jobs), args.jobs)
    plan = schedule(catalogue, jobs, lookahead=args.lookahead)
    if args.json:
        sys.stdout.writelines(json_chunks(plan, plan_document))
        sys.stdout.write("\n")
    else:
        print(text(plan))
    return 0
