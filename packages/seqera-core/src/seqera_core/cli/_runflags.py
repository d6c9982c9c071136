"""``seqera run``'s flags: the parser's arguments and help, and the resource request they
make. Values are read by :func:`request_of`, not by argparse types, so a bad one is a
ResourceError naming the flag and the value as written (exit 2).
"""

from __future__ import annotations

import argparse
import textwrap

from ..backends.registry import BACKENDS
from ..dialects._values import number
from ..dialects.human import DURATION_FORMS, SIZE_FORMS, parse_duration, parse_size
from ..errors import ResourceError
from ..models import Accelerator, ResourceRequest
from ._args import key_value

__all__ = ["EPILOG", "add_arguments", "request_of"]


def _item(flags: str, text: str) -> str:
    return textwrap.fill(text, 88, initial_indent=f"  {flags:<19}", subsequent_indent=" " * 21)


EPILOG = f"""\
units:
{_item("--memory, --disk", SIZE_FORMS + ".")}
{_item("--time", DURATION_FORMS + ".")}

exit status:
  the job's own exit code; 128+N when the job was killed by signal N (a time limit
  sends SIGTERM, then SIGKILL; an out-of-memory kill is SIGKILL) or 1 when the
  backend reports no code for a job that did not succeed; 2 for invalid input or a
  job no platform can run; 130 after Ctrl-C (143 after SIGTERM, 129 after SIGHUP), which
  cancel the job.

The job's stdin is empty; its stdout and stderr are streamed while it runs.
The local backend needs no configuration and never runs more than the machine holds.
"""


def _cpus(text: str) -> float:
    expected = "a number of cores greater than 0, e.g. 2 or 0.5"
    value = number("--cpus", text, expected)
    if value <= 0:
        raise ResourceError("--cpus", text, expected)
    return value


def _gpus(text: str) -> Accelerator:
    kind, _, count = text.rpartition(":")
    expected = "a count of at least 1, or TYPE:COUNT, e.g. 2 or a100:2"
    try:
        value = number("--gpus", count, expected, integer=True)
    except ResourceError:  # the error quotes the value as written, not its count part
        raise ResourceError("--gpus", text, expected) from None
    if value < 1 or (kind == "" and ":" in text):
        raise ResourceError("--gpus", text, expected)
    return Accelerator(int(value), kind or None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``seqera run``'s options and its COMMAND to ``parser``."""
    parser.add_argument(
        "--backend", choices=BACKENDS, help="default: from seqera config, else local"
    )
    # Values are parsed in request_of() so a bad one raises ResourceError (exit 2, flag named).
    parser.add_argument("--cpus", metavar="N", help="cores, e.g. 2 or 0.5")
    parser.add_argument("--memory", metavar="SIZE", help="e.g. 4GB or 4GiB (see units)")
    parser.add_argument("--time", metavar="DURATION", help="time limit, e.g. 1h30m or 01:30:00")
    parser.add_argument("--disk", metavar="SIZE", help="scratch space, e.g. 20GB")
    parser.add_argument("--gpus", metavar="[TYPE:]N", help="accelerators, e.g. 1 or a100:2")
    parser.add_argument(
        "--image", metavar="IMAGE", help="container image (required on ecs and batch)"
    )
    parser.add_argument(
        "--machine-type", metavar="TYPE", help="instance type hint, e.g. m5.large (ecs)"
    )
    parser.add_argument(
        "--ecs",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an ecs.* setting, e.g. cluster=genomics (repeatable; see seqera config)",
    )
    parser.add_argument(
        "--batch",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a batch.* setting of AWS Batch, e.g. queue=genomics (repeatable)",
    )
    parser.add_argument("--queue", help="queue or partition")
    parser.add_argument("--account", help="account to charge")
    parser.add_argument("--platform", metavar="FILE", help="platform definition to check against")
    parser.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )
    parser.add_argument("--name", help="job name (default: the command's name)")
    parser.add_argument(
        "--history",
        metavar="PATH",
        help="size the job from this history (SQLite path or postgresql:// URL) and record "
        "it there when it ends (default: seqera config's history, $SEQERA_HISTORY)",
    )
    parser.add_argument("--workdir", metavar="DIR", help="where the job runs (default: here)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="report submission, wall time and memory"
    )
    # Not "command": the top-level parser keeps the subcommand's name there.
    parser.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command, after --"
    )


def request_of(args: argparse.Namespace) -> ResourceRequest:
    """The request the resource flags of ``args`` make, each read and checked here."""
    return ResourceRequest(
        cpus=None if args.cpus is None else _cpus(args.cpus),
        memory=None if args.memory is None else parse_size(args.memory, "--memory"),
        disk=None if args.disk is None else parse_size(args.disk, "--disk"),
        time=None if args.time is None else parse_duration(args.time, "--time"),
        accelerator=None if args.gpus is None else _gpus(args.gpus),
        machine_type=args.machine_type,
        container=args.image,
        queue=args.queue,
        account=args.account,
        labels=dict(key_value("--label", text) for text in args.label),
    )
