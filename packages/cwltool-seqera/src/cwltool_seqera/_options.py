"""This command's own options; every other argument goes to cwltool unchanged."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from seqera_core.backends.registry import BACKENDS
from seqera_core.config import key_value
from seqera_core.errors import UsageError

__all__ = ["SeqeraOptions", "help_text", "parse_options"]


@attrs.frozen
class SeqeraOptions:
    """The ``--executor`` and ``--seqera-*`` values of one invocation."""

    executor: str | None = None  # None: seqera config's backend ($SEQERA_BACKEND), else local
    platform: Path | None = None
    resolver_url: str | None = None
    labels: Mapping[str, str] = attrs.field(factory=dict)
    workdir: Path | None = None
    poll_interval: float | None = None  # None: 0.1 s on the local backend, 1 s on a cluster
    backend_options: Mapping[str, str] = attrs.field(factory=dict)
    local_cpus: float | None = None
    local_memory: int | None = None
    ecs: Mapping[str, str] = attrs.field(factory=dict)  # ecs.* config keys, without "ecs."
    batch: Mapping[str, str] = attrs.field(factory=dict)  # AWS Batch's batch.* keys, the same
    s3_prefix: str | None = None  # where ECS jobs' inputs and outputs travel
    image: str | None = None  # ECS: the image of a tool without a DockerRequirement
    unknown_timeout: float = 300.0  # seconds of continuous UNKNOWN status before giving up
    history: str | None = None  # task history (path or URL): sizes jobs, records each one
    report: Path | None = None  # the run's HTML report, written when the run ends
    pull_first: bool = False  # container images made ready on this host before the jobs
    shrink_self_sizing: bool = False  # tools given $(runtime.ram) may be sized below it


LARGEST = 2**63 - 1  # as seqera-core's resource values: an int64


def _pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    return dict(key_value(flag, value) for value in values)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cwltool-seqera",
        usage="cwltool-seqera [--executor BACKEND] [--seqera-* ...] [cwltool options] "
        "WORKFLOW [INPUTS]",
        description="cwltool with every job sent through seqera-core. Unset options fall "
        "back to seqera's configuration (seqera.yaml, $SEQERA_*); every other argument "
        "goes to cwltool, whose options follow.",
        add_help=False,
        allow_abbrev=False,
    )
    add = parser.add_argument_group("cwltool-seqera options").add_argument
    add("--executor", metavar="BACKEND", help=f"where jobs run: {', '.join(BACKENDS)}")
    add(
        "--seqera-platform",
        type=Path,
        metavar="YAML",
        help="platform definition: a job no queue can run fails before submission",
    )
    add("--seqera-resolver-url", metavar="URL", help="an HTTP resolver (seqera-sidecar serve)")
    add("--seqera-label", action="append", default=[], metavar="K=V", help="a run label")
    add(
        "--seqera-workdir",
        type=Path,
        metavar="DIR",
        help="job files and logs (default ./cwltool-seqera-work)",
    )
    add(
        "--seqera-poll-interval",
        metavar="SECONDS",
        help="between status checks (0.1 local, 1 on a cluster)",
    )
    add(
        "--seqera-backend-option",
        action="append",
        default=[],
        metavar="K=V",
        help="a batch scheduler's setting",
    )
    add("--seqera-local-cpus", metavar="N", help="cores the local backend shares")
    add("--seqera-local-memory", metavar="BYTES", help="memory the local backend shares")
    add("--seqera-ecs", action="append", default=[], metavar="K=V", help="an ECS setting")
    add("--seqera-batch", action="append", default=[], metavar="K=V", help="an AWS Batch setting")
    add(
        "--seqera-s3-prefix",
        metavar="S3URL",
        help="s3://BUCKET[/PREFIX] for jobs without a shared filesystem (ECS, AWS Batch)",
    )
    add(
        "--seqera-image",
        metavar="IMAGE",
        help="ECS, AWS Batch: image of a tool without DockerRequirement",
    )
    add(
        "--seqera-unknown-timeout",
        metavar="SECONDS",
        help="of unknown status before a job fails (default 300)",
    )
    add(
        "--seqera-history",
        metavar="PATH|URL",
        help="task history to size jobs from (SQLite path or postgresql:// URL)",
    )
    add("--seqera-report", type=Path, metavar="HTML", help="write the run's report at the end")
    add("--seqera-pull-first", action="store_true", help="pull container images before jobs")
    add(
        "--seqera-shrink-self-sizing",
        action="store_true",
        help="size tools given $(runtime.ram) below what they declare",
    )
    return parser  # fmt: skip


def help_text() -> str:
    """This command's own options, printed before cwltool's in ``--help``."""
    return _parser().format_help()


def _number(flag: str, text: str | None, kind: type[float] | type[int]) -> float | None:
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:  # also int() past 4,300 digits
        value = -1
    # inf passed `> 0`: a poll interval or timeout of inf waits for ever
    if not (0 < value <= LARGEST and math.isfinite(value)):  # a huge int has no float
        shown = repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"
        raise UsageError(f"{flag} {shown}: expected a number greater than 0, at most {LARGEST}")
    return value


def parse_options(argv: Sequence[str]) -> tuple[SeqeraOptions, list[str]]:
    """Split ``argv`` into this command's options and the arguments cwltool receives.

    Only arguments before a ``--`` are looked at; cwltool sees the rest in order.
    """
    args = list(argv)
    cut = args.index("--") if "--" in args else len(args)
    ours, rest = _parser().parse_known_args(args[:cut])
    if ours.executor is not None and ours.executor not in BACKENDS:
        raise UsageError(f"--executor {ours.executor!r}: expected one of {', '.join(BACKENDS)}")
    interval = _number("--seqera-poll-interval", ours.seqera_poll_interval, float)
    memory = _number("--seqera-local-memory", ours.seqera_local_memory, int)
    unknown = _number("--seqera-unknown-timeout", ours.seqera_unknown_timeout, float)
    s3 = ours.seqera_s3_prefix
    if s3 is not None and not (s3.startswith("s3://") and s3[5:].split("/", 1)[0]):
        raise UsageError(
            f"--seqera-s3-prefix {ours.seqera_s3_prefix!r}: expected s3://BUCKET[/PREFIX]"
        )
    options = SeqeraOptions(
        executor=ours.executor,
        platform=ours.seqera_platform,
        resolver_url=ours.seqera_resolver_url,
        labels=_pairs(ours.seqera_label, "--seqera-label"),
        workdir=ours.seqera_workdir,
        poll_interval=interval,
        backend_options=_pairs(ours.seqera_backend_option, "--seqera-backend-option"),
        local_cpus=_number("--seqera-local-cpus", ours.seqera_local_cpus, float),
        local_memory=None if memory is None else int(memory),
        ecs=_pairs(ours.seqera_ecs, "--seqera-ecs"),
        batch=_pairs(ours.seqera_batch, "--seqera-batch"),
        s3_prefix=ours.seqera_s3_prefix,
        image=ours.seqera_image,
        unknown_timeout=300.0 if unknown is None else unknown,
        history=ours.seqera_history,
        report=ours.seqera_report,
        pull_first=ours.seqera_pull_first,
        shrink_self_sizing=ours.seqera_shrink_self_sizing,
    )
    return options, rest + args[cut:]
