"""``seqera validate``: can this platform run the job, and on which queue?"""

from __future__ import annotations

import argparse
import json

import attrs

from .. import platforms, wire
from ..dialects.engines import translate
from ..dialects.slurm import check_request
from ..errors import UsageError
from ._args import settings
from .explain import (
    add_engine_options,
    declared,
    input_warnings,
    platform_lines,
    report_document,
    values_text,
)

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera validate``."""
    parser = commands.add_parser(
        "validate",
        help="check an engine's resources against a platform definition before submitting",
        description=(
            "Print errors (the job can never run here), warnings and suggestions, and the "
            "queue that would be chosen. Exits 2 when there are errors, 0 otherwise."
        ),
    )
    parser.set_defaults(run=run)
    parser.add_argument("--platform", metavar="FILE", help="platform YAML (default: from config)")
    add_engine_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Print the report; 2 on errors."""
    translation = translate(args.engine, declared(args), process=args.process)
    check_request(translation.request)  # slurm_extra that sbatch could never take: exit 2
    path = settings(platform=args.platform).get("platform")
    if not path:
        raise UsageError(
            "--platform: no platform given here, in SEQERA_PLATFORM or in a config file"
        )
    platform = platforms.load(path)
    report = platforms.validate(platform, translation.request)
    # The translation's own doubts first: a unit slip explains most impossible jobs.
    report = attrs.evolve(
        report, warnings=(*input_warnings(args.engine, translation), *report.warnings)
    )
    if args.json:
        document = {"platform": platform.name, **report_document(report)}
        document["request"] = wire.unstructure(report.request)
        print(json.dumps(document, indent=2, sort_keys=True))
    else:
        print(f"platform {platform.name} ({platform.scheduler}, {platform.source})")
        print("\n".join(platform_lines(report)))
        if report.ok:
            print(f"effective: {values_text(report.request)}")
    return 2 if report.errors else 0
