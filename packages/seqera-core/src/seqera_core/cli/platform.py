"""``seqera platform generate --from slurm|batch``: a platform definition from the cluster
(or the AWS Batch account) itself."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from .. import platforms
from ..backends.batch._commands import run_command
from ..errors import SeqeraError, UsageError
from ..platforms._generate import SCONTROL, SINFO

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera platform``."""
    parser = commands.add_parser(
        "platform",
        help="write a platform definition from what the scheduler says of itself",
        description=(
            "generate --from slurm: partitions, their limits (CPUs, memory, time), GPUs "
            "and node features from scontrol and sinfo, as a platform YAML that seqera "
            "validate and queue choice then use (review it; cost rates are not in Slurm). "
            "generate --from batch: AWS Batch job queues and the largest job their compute "
            "environments' instance types hold (boto3's credentials and region)."
        ),
    )
    parser.set_defaults(run=run)
    parser.add_argument("action", choices=("generate",))
    parser.add_argument("--from", dest="source", choices=("slurm", "batch"), required=True)
    parser.add_argument("--name", default=None, help="the platform's name (default: cluster)")
    parser.add_argument("-o", "--output", type=Path, help="write here (default: stdout)")


def _ask(argv: list[str]) -> str:
    result = run_command(argv, 30.0, None, None)
    if not result.ok:
        raise SeqeraError(f"{argv[0]} failed: {result.describe()}")
    return result.stdout


def _aws_batch(name: str) -> str:
    from ..backends.registry import entry  # boto3 is the batch extra's: imported here

    entry("batch")  # the backend must be installed (and its extra, for boto3)
    try:
        from ..backends.awsbatch._backend import AwsBatchBackend, BatchSettings
        from ..backends.awsbatch._platform import platform_yaml
    except ModuleNotFoundError as exc:
        raise UsageError(f"--from batch needs {exc.name}; install seqera-core[batch]") from None
    backend = AwsBatchBackend(BatchSettings(queue="-"))  # only its clients are used
    return platform_yaml(name, backend)


def run(args: argparse.Namespace) -> int:
    """Ask scontrol and sinfo once each (or AWS Batch); print or write the YAML."""
    if args.source == "batch":
        text = _aws_batch(args.name or "aws-batch")
    else:
        scontrol = _ask(SCONTROL)
        sinfo = _ask(SINFO)
        name = args.name or os.environ.get("SLURM_CLUSTER_NAME") or "slurm"
        text = platforms.platform_yaml(name, scontrol, sinfo)
    platforms.parse(yaml.safe_load(text), "generated")  # what it wrote loads as written
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        args.output.write_text(text)
    except OSError as exc:
        raise UsageError(f"--output: cannot write {args.output}: {exc.strerror}") from None
    return 0
