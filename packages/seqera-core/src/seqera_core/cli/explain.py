"""``seqera explain``: how an engine's resources translate into a backend's submission.

Under the routing backend (``--backend route``, ``route.*`` in config, a platform's
``route:``) it also asks every candidate backend, as a run would at this moment, whether
it can run the job and why not (memory, GPUs, time limit, no shared files and nothing
staged, pinned elsewhere), when the job would start and end there and what it would cost,
and which one the objective picks; a job no candidate can run exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
from typing import Any

import attrs

from .. import wire
from ..backends.registry import BACKENDS, entry
from ..dialects.engines import ENGINES, GENERIC_KEYS, as_submitted, submission, translate
from ..labels import (
    ecs_tags,
    encode_labels,
    label_environment,
    pbs_args,
    sge_context,
    slurm_comment_args,
)
from ..models import ResourceRequest, Submission, Translation
from ..planning import Job, required_type
from ..planning import catalogue as catalogues
from ..platforms import Platform, ValidationReport, suspicious
from ..session import Session
from ..squash import SquashMode, SquashPolicy, unsquashable
from ..units import format_bytes, format_seconds
from ._args import key_value, settings

__all__ = [
    "add_engine_options",
    "add_parser",
    "declared",
    "ecs_instance",
    "input_warnings",
    "platform_lines",
    "report_document",
    "route_lines",
    "route_verdicts",
    "run",
    "squash_decision",
    "values_text",
]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera explain``."""
    explain = commands.add_parser(
        "explain",
        help="show the canonical request and the native submission for an engine's resources",
        description=(
            "Translate resources written in an engine's dialect into the common request "
            "(bytes, seconds, cores) and the submission a backend would receive."
        ),
    )
    explain.set_defaults(run=run)
    explain.add_argument("--backend", choices=BACKENDS, help="default: from seqera config")
    add_engine_options(explain)
    explain.add_argument(
        "--platform", metavar="FILE", help="also choose a queue and estimate the cost"
    )
    explain.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="a run label"
    )
    explain.add_argument(
        "--squash",
        choices=[m.value for m in SquashMode],
        help="whether the job would share an array or allocation (default: platform, config)",
    )
    explain.add_argument(
        "--staged",
        action="store_true",
        help="route: the engine stages this job's files (CWL with --seqera-s3-prefix and "
        "an image, Snakemake with a default storage provider), so a backend without the "
        "shared file system may run it",
    )
    explain.add_argument("--json", action="store_true", help="print one JSON object")


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """``--engine``, the generic resource flags, ``--set`` and ``--process``."""
    parser.add_argument("--engine", choices=ENGINES, required=True)
    for name in ("cpus", "memory", "time", "disk", "accelerator"):
        keys = ", ".join(f"{e}: {GENERIC_KEYS[e][name]}" for e in ENGINES)
        parser.add_argument(f"--{name}", metavar="VALUE", help=f"the engine's own key ({keys})")
    parser.add_argument(
        "--set",
        dest="values",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any resource in the engine's own words, e.g. mem_mb=4000 or ramMin=1000.5",
    )
    parser.add_argument("--process", help="process, rule or step name")


def declared(args: argparse.Namespace) -> dict[str, Any]:
    """The engine's resources from the generic flags and ``--set``, in the engine's words."""
    values: dict[str, Any] = {}
    for name, key in GENERIC_KEYS[args.engine].items():
        if getattr(args, name) is not None:
            values[key] = getattr(args, name)
    values.update(key_value("--set", text) for text in args.values)
    return values


def _human(
    engine: str,
    declared: dict[str, Any],
    request: ResourceRequest,
    result: Submission,
    messages: dict[str, list[str]],
) -> str:
    lines = [f"engine {engine}: " + " ".join(f"{k}={v!r}" for k, v in declared.items())]
    lines.append("canonical request:")
    if request.cpus is not None:
        lines.append(f"  cpus    {request.cpus}")
    if request.memory is not None:
        lines.append(f"  memory  {request.memory} bytes ({format_bytes(request.memory)})")
    if request.disk is not None:
        lines.append(f"  disk    {request.disk} bytes ({format_bytes(request.disk)})")
    if request.time is not None:
        lines.append(f"  time    {request.time} s ({format_seconds(request.time)})")
    if request.accelerator is not None:
        kind = f" x {request.accelerator.type}" if request.accelerator.type else ""
        lines.append(f"  gpus    {request.accelerator.count}{kind}")
    if request.memory_per_cpu is not None:
        per_cpu = request.memory_per_cpu
        lines.append(f"  memory per cpu  {per_cpu} bytes ({format_bytes(per_cpu)})")
    for name in ("nodes", "tasks", "tasks_per_node", "mpi"):
        if (value := getattr(request, name)) is not None:
            lines.append(f"  {name.replace('_', ' '):<7} {value}")
    lines.append(f"native submission ({result.backend}):")
    command = {"slurm": "sbatch", "pbs": "qsub", "torque": "qsub"}.get(result.backend)
    if command:
        lines.append(f"  {shlex.join([command, *result.args])}")
    else:
        lines.extend(f"  {k} = {json.dumps(v)}" for k, v in result.native.items())
    for title, entries in messages.items():
        lines.extend(f"{title}: {entry}" for entry in entries)
    return "\n".join(lines)


def input_warnings(
    engine: str, translation: Translation, request: ResourceRequest | None = None
) -> list[str]:
    """Likely unit mistakes in what was declared and in ``request`` (what would be
    submitted, when given), and the keys the engine's dialect does not read."""
    found = list(suspicious(translation.request))
    if request is not None:
        found += [w for w in suspicious(request) if w not in found]
    return [
        *found,
        *(
            f"{key} is not a resource seqera reads; it stays a custom {engine} resource"
            for key in translation.ignored
        ),
    ]


def platform_lines(report: ValidationReport) -> list[str]:
    """The validation report as ``error:``/``warning:``/``suggestion:``/queue lines."""
    lines = [f"error: {e}" for e in report.errors]
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"suggestion: {s}" for s in report.suggestions]
    if report.queue is not None:
        lines.append(f"queue: {report.queue}")
    if report.hourly_cost is not None:
        total = (
            "" if report.estimated_cost is None else f", {report.estimated_cost:.4f} for the job"
        )
        lines.append(f"cost: {report.hourly_cost:.4f} per hour{total}")
    return lines


def ecs_instance(request: ResourceRequest, platform: Platform | None) -> dict[str, Any]:
    """The instance type an ECS task would get (its ``machine_type``, else the cheapest that
    covers it) from the platform's instance types or the shipped catalogue, and its price."""
    own = platform.catalogue() if platform is not None else None
    catalogue = own or catalogues.default()
    task = Job(
        request.process or "task",
        request.cpus or 0.125,  # no cpus declared: ECS's minimum of 128 units
        request.memory or 1,
        request.accelerator.count if request.accelerator else 0,
        request.machine_type,
    )
    chosen = required_type(catalogue, task)
    return {"type": chosen.name, "hourly_price": chosen.price, "catalogue": catalogue.source}


def _label_form(backend: str, labels: dict[str, str]) -> object:
    # How each backend's users find the labels again (see seqera_core.labels): sbatch and
    # qsub arguments joined by spaces (the encoding holds none), ECS tags, else the
    # variables in the job's environment.
    if not labels:
        return None
    if backend == "slurm":
        return " ".join(slurm_comment_args(labels))
    if backend == "pbs":
        return " ".join(pbs_args(labels))
    if backend in ("ecs", "batch"):  # AWS tags, the same rules on a Batch job
        return ecs_tags(labels)
    if backend == "sge":
        return "-ac " + ",".join(sge_context(labels))
    if backend == "lsf":  # after the submission key in the job description
        return "-Jd " + encode_labels(labels)
    return label_environment(labels)


def run(args: argparse.Namespace) -> int:
    """Print the explanation; exit 2 when the platform cannot run the job."""
    values = declared(args)
    translation = translate(args.engine, values, process=args.process)
    flags = dict(key_value("--label", text) for text in args.label)
    config = settings(
        backend=args.backend,
        platform=args.platform,
        labels=flags or None,
        **{"squash.mode": getattr(args, "squash", None)},
    )
    submitted, filled = as_submitted(args.engine, translation.request)
    with Session(config, args.engine) as session:
        prepared = session.prepare(submitted)
        platform, backend, policy = session.platform, session.backend_name, session.squash
        site = session.backend_settings
        routed = None
        if session.entry.composite:  # asks each candidate now: the one place it opens one
            routed = route_verdicts(session.backend, prepared.request, args)
            if routed["chosen"] is not None:  # the submission the chosen one would get
                backend = routed["chosen"]
                section = entry(backend).section
                site = session.config.section(section) if section else {}
    request, report = prepared.request, prepared.report
    result = submission(backend, request, site)
    labels = _label_form(backend, dict(prepared.labels))
    instance = ecs_instance(request, platform) if backend == "ecs" else None
    resolver = prepared.resolution.resolver if prepared.resolution else None
    together = squash_decision(backend, request, dict(prepared.labels), policy)
    messages = {
        "capped": list(prepared.notes),
        "note": [*filled, *result.notes],
        "warning": input_warnings(args.engine, translation, request),
    }
    if args.json:
        document = {
            "engine": args.engine,
            "declared": values,
            "platform": None if report is None else report_document(report),
            "request": wire.unstructure(translation.request),
            "effective": wire.unstructure(request),
            "resolver": resolver,
            "backend": backend,
            "native": {"args": list(result.args), "values": dict(result.native)},
            "labels": labels,
            "instance": instance,
            "capped": messages["capped"],
            "notes": messages["note"],
            "warnings": messages["warning"],
            "squash": together,
            "route": routed,
        }
        print(json.dumps(document, indent=2, sort_keys=True))
    else:
        print(_human(args.engine, values, translation.request, result, messages))
        if request != translation.request:
            print(f"effective ({resolver or 'not resolved'}): {values_text(request)}")
        if labels is not None:
            print(f"labels: {labels if isinstance(labels, str) else json.dumps(labels)}")
        if instance is not None:
            print(f"instance: {instance['type']} at {instance['hourly_price']:.4f} per hour")
        if together is not None:
            print(f"{together['how']}: {together['why']}")
        if report is not None:
            print("\n".join(platform_lines(report)))
        if routed is not None:
            print("\n".join(route_lines(routed)))
    routable = routed is None or routed["chosen"] is not None
    return 0 if prepared.ok and routable else 2


def route_verdicts(
    backend: Any, request: ResourceRequest, args: argparse.Namespace
) -> dict[str, Any]:
    """Each candidate's verdict on the job and the objective's choice, JSON-ready."""
    from ..backends import JobSpec
    from ..backends.route import Unroutable, choose

    spec = JobSpec(args.process or "job", ["true"], request)
    if args.staged:
        spec = attrs.evolve(spec, staged=lambda: spec)
    options = backend.verdicts(spec)
    candidates = [_candidate(o) for o in options]
    found: dict[str, Any] = {"objective": backend.objective, "candidates": candidates}
    if backend.ceiling is not None:
        found["max_cost_per_hour_saved"] = backend.ceiling
    try:
        choice = choose(options, backend.objective, backend.ceiling)
    except Unroutable as exc:
        return found | {"chosen": None, "why": str(exc)}
    return found | {"chosen": choice.backend, "why": choice.reason}


def route_lines(routed: dict[str, Any]) -> list[str]:
    """The route's verdicts as ``route:`` lines, one per candidate, then the choice."""
    ceiling = routed.get("max_cost_per_hour_saved")
    at_most = "" if ceiling is None else f", at most {ceiling:g} per hour saved"
    lines = [f"route: objective {routed['objective']}{at_most}"]
    for c in routed["candidates"]:
        if not c["eligible"]:
            lines.append(f"  {c['backend']}: not eligible: {c['reason']}")
            continue
        start, finish = (
            "never" if c[k] is None else format_seconds(math.ceil(c[k]))
            for k in ("start_seconds", "finish_seconds")
        )
        lines.append(f"  {c['backend']}: eligible, starts in {start}, ends in {finish}, "
                     f"cost {c['cost']:.4g}")  # fmt: skip
    if routed["chosen"] is None:
        lines.append(f"error: {routed['why']}")
    else:
        lines.append(f"route: {routed['chosen']} ({routed['why']})")
    return lines


def _candidate(option: Any) -> dict[str, Any]:
    found = {"backend": option.backend, "eligible": option.refused is None,
             "reason": option.refused}  # fmt: skip
    if option.refused is None:
        found.update(start_seconds=_finite(option.start), finish_seconds=_finite(option.finish),
                     cost=option.cost)  # fmt: skip
    return found


def _finite(value: float) -> float | None:
    return None if value == float("inf") else round(value, 3)


def squash_decision(
    backend: str, request: ResourceRequest, labels: dict[str, str], policy: SquashPolicy
) -> dict[str, str] | None:
    """Whether the job would share an array call or an allocation, and why (None: off)."""
    if policy.mode is SquashMode.OFF or not entry(backend).batch:
        return None
    key = labels.get(policy.key) or request.labels.get(policy.key)
    keyed = f" and {policy.key}={key}" if key else ""
    alike = f"queue, account, container and options{keyed}"
    array = (
        f"goes out as one element of an array with the jobs of the same resources, {alike} "
        f"that are ready with it (at most {policy.max_jobs} per call)"
    )
    if policy.mode is SquashMode.ARRAY:
        return {"how": "array", "why": array}
    why = unsquashable(request, policy)
    if why is not None:
        return {"how": "alone", "why": f"not squashed: {why}; it {array}"}
    return {
        "how": "squash",
        "why": f"shares an allocation (at most {policy.max_jobs} jobs, "
        f"{format_seconds(policy.max_time)}) with the jobs of the same {alike}; "
        "a launcher inside it starts the job when cores, memory and time allow",
    }


def values_text(request: ResourceRequest) -> str:
    """``cpus=2 memory=8 GiB time=1h queue=short``: the values a request declares."""
    shown = {
        "cpus": request.cpus,
        "memory": None if request.memory is None else format_bytes(request.memory),
        "disk": None if request.disk is None else format_bytes(request.disk),
        "time": None if request.time is None else format_seconds(request.time),
        "queue": request.queue,
    }
    return " ".join(f"{k}={v}" for k, v in shown.items() if v is not None)


def report_document(report: ValidationReport) -> dict[str, Any]:
    """The validation report as JSON-ready values."""
    return {
        "errors": list(report.errors),
        "warnings": list(report.warnings),
        "suggestions": list(report.suggestions),
        "queue": report.queue,
        "hourly_cost": report.hourly_cost,
        "estimated_cost": report.estimated_cost,
    }
