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

__all__ = ["SeqeraOptions", "parse_options"]


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
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--executor")
    parser.add_argument("--seqera-platform", type=Path)
    parser.add_argument("--seqera-resolver-url")
    parser.add_argument("--seqera-label", action="append", default=[])
    parser.add_argument("--seqera-workdir", type=Path)
    parser.add_argument("--seqera-poll-interval")
    parser.add_argument("--seqera-backend-option", action="append", default=[])
    parser.add_argument("--seqera-local-cpus")
    parser.add_argument("--seqera-local-memory")
    parser.add_argument("--seqera-ecs", action="append", default=[])
    parser.add_argument("--seqera-s3-prefix")
    parser.add_argument("--seqera-image")
    parser.add_argument("--seqera-unknown-timeout")
    parser.add_argument("--seqera-history")
    parser.add_argument("--seqera-report", type=Path)
    parser.add_argument("--seqera-pull-first", action="store_true")
    parser.add_argument("--seqera-shrink-self-sizing", action="store_true")
    return parser


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
        s3_prefix=ours.seqera_s3_prefix,
        image=ours.seqera_image,
        unknown_timeout=300.0 if unknown is None else unknown,
        history=ours.seqera_history,
        report=ours.seqera_report,
        pull_first=ours.seqera_pull_first,
        shrink_self_sizing=ours.seqera_shrink_self_sizing,
    )
    return options, rest + args[cut:]
