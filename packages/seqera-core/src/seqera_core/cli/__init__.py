"""The ``seqera`` command line; each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import SeqeraError
from . import explain, run

__all__ = ["main"]

EXIT_USAGE = 2
_COMMANDS = (explain, run)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``seqera`` command line; returns the exit status (2 for invalid input)."""
    parser = argparse.ArgumentParser(
        prog="seqera", description="Resource translation and dispatch for workflow engines."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        command.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except SeqeraError as exc:
        print(f"seqera {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return status


if __name__ == "__main__":
    sys.exit(main())
