"""The ``seqera`` command line; each subcommand lives in its own module.

A subcommand's module is imported only when it is the one to run (or to list them all,
for ``seqera --help`` and a mistyped name): ``explain`` and ``run`` bring in every
backend, the wire format's converters and the report, about a quarter of a second of
start-up that ``seqera plan`` on 100,000 jobs would otherwise pay in its 2 s budget.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..errors import SeqeraError, UsageError

__all__ = ["main", "printable_stdout"]

EXIT_USAGE = 2
EXIT_FAILURE = 1
# the modules of the subcommands, in the order `seqera --help` lists them
_COMMANDS = ("explain", "run", "validate", "config", "plan", "squash", "report", "platform")


def printable_stdout() -> None:
    """Let stdout show any text: a path or name from argv bytes that are not UTF-8 holds
    lone surrogates, which a UTF-8 stdout refuses (UnicodeEncodeError) unless the locale
    is C/POSIX. They print as ``\\udcff``, as Python's own stderr prints them."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


# 128 + SIGINT, as a shell reports a command Ctrl-C ended
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``seqera`` command line; returns the exit status (2 for invalid input, 1 for
    a failure such as an unreachable scheduler, 130 when interrupted).
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C before a command installs its own handling (or under `uv run`, which
        # forwards the terminal's SIGINT again): one line, no traceback, as a shell would.
        print("seqera: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="seqera", description="Resource translation and dispatch for workflow engines."
    )
    # `_subcommand`, so no subcommand option can overwrite it
    commands = parser.add_subparsers(dest="_subcommand", required=True)
    # the top-level parser has no option but --help: the first word is the subcommand
    chosen = argv[0] if argv and argv[0] in _COMMANDS else None
    for name in (chosen,) if chosen else _COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(commands)
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
