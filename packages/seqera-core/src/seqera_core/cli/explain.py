"""``seqera explain``: how an engine's resources translate into a backend's submission."""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Any

from .. import platforms, wire
from ..checks import suspicious
from ..dialects.engines import BACKENDS, ENGINES, GENERIC_KEYS, submission, translate
from ..limits import apply_limits
from ..models import ResourceRequest, Submission
from ..platforms import ValidationReport
from ..units import format_bytes, format_seconds
from ._args import key_value, settings

__all__ = [
    "add_engine_options",
    "add_parser",
    "declared",
    "platform_lines",
    "report_document",
    "run",
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
    lines.append(f"native submission ({result.backend}):")
    command = {"slurm": "sbatch", "pbs": "qsub", "torque": "qsub"}.get(result.backend)
    if command:
        lines.append(f"  {shlex.join([command, *result.args])}")
    else:
        lines.extend(f"  {k} = {json.dumps(v)}" for k, v in result.native.items())
    for title, entries in messages.items():
        lines.extend(f"{title}: {entry}" for entry in entries)
    return "\n".join(lines)


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


def run(args: argparse.Namespace) -> int:
    """Print the explanation; exit 2 when the platform cannot run the job."""
    values = declared(args)
    translation = translate(args.engine, values, process=args.process)
    capped = apply_limits(translation.request)
    request = capped.request
    config = settings(backend=args.backend, platform=args.platform)
    args.backend = config.get("backend")
    report = None
    if config.get("platform"):
        report = platforms.validate(platforms.load(config.get("platform")), request)
        request = report.request
    result = submission(args.backend, request)
    messages = {
        "capped": list(capped.notes),
        "note": list(result.notes),
        "warning": [
            *suspicious(request),
            *(
                f"{key} is not a resource seqera reads; it stays a custom {args.engine} resource"
                for key in translation.ignored
            ),
        ],
    }
    if args.json:
        document = {
            "engine": args.engine,
            "declared": values,
            "platform": None if report is None else report_document(report),
            "request": wire.unstructure(request),
            "backend": args.backend,
            "native": {"args": list(result.args), "values": dict(result.native)},
            "capped": messages["capped"],
            "notes": messages["note"],
            "warnings": messages["warning"],
        }
        print(json.dumps(document, indent=2, sort_keys=True))
    else:
        print(_human(args.engine, values, request, result, messages))
        if report is not None:
            print("\n".join(platform_lines(report)))
    return 2 if report is not None and report.errors else 0


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
