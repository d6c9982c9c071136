"""The ``seqera`` command line; each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import SeqeraError, UsageError
from . import config, explain, plan, report, run, squash, validate

__all__ = ["main", "printable_stdout"]

EXIT_USAGE = 2
EXIT_FAILURE = 1
_COMMANDS = (explain, run, validate, config, plan, squash, report)


def printable_stdout() -> None:
    """Let stdout show any text: a path or name from argv bytes that are not UTF-8 holds
    lone surrogates, which a UTF-8 stdout refuses (UnicodeEncodeError) unless the locale
    is C/POSIX. They print as ``\\udcff``, as Python's own stderr prints them."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``seqera`` command line; returns the exit status (2 for invalid input, 1 for
    a failure such as an unreachable scheduler).
    """
    parser = argparse.ArgumentParser(
        prog="seqera", description="Resource translation and dispatch for workflow engines."
    )
    # `_subcommand`, so no subcommand option can overwrite it
    commands = parser.add_subparsers(dest="_subcommand", required=True)
    for command in _COMMANDS:
        command.add_parser(commands)
    args = parser.parse_args(argv)
    printable_stdout()
    try:
        status: int = args.run(args)
    except UsageError as exc:
        print(f"seqera {args._subcommand}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SeqeraError as exc:
        print(f"seqera {args._subcommand}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return status
