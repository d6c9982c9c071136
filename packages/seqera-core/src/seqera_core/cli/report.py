"""``seqera report``: one offline HTML page (or ``--json``) of what runs asked for and used."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import platforms
from ..errors import ResourceError
from ..history import DEFAULT_HISTORY, open_history
from ..redaction import redacted
from ..report import build, document, headline, parse_since
from ._args import settings

__all__ = ["DEFAULT_HISTORY", "add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera report``."""
    parser = commands.add_parser(
        "report",
        help="what runs asked for, used, wasted and cost, as one offline HTML page",
        description=(
            "Read the task history and write one self-contained HTML page (nothing fetched "
            "when it is opened): totals, failures by cause, requested against used memory, "
            "time and cpus per process, what the right-sizer would ask for next time and "
            "the configs that apply it. The page needs the report extra: "
            "pip install 'seqera-core[report]'. --json needs nothing more."
        ),
    )
    parser.set_defaults(run=run)
    parser.add_argument(
        "--history",
        metavar="DB|URL",
        help=f"SQLite path, sqlite:/// or postgresql:// URL (default: $SEQERA_HISTORY, "
        f"config, else {DEFAULT_HISTORY})",
    )
    parser.add_argument(
        "--run",
        dest="runs",
        action="extend",
        nargs="+",
        default=[],
        metavar="RUN_ID",
        help="the runs to report (repeatable; default: every run in the history)",
    )
    parser.add_argument(
        "--since", metavar="DATE", help="only attempts finished since, e.g. 2026-11-24T08:00"
    )
    parser.add_argument(
        "--platform", metavar="FILE", help="platform definition whose cost rates price the runs"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="where to write (default: report.html; - for stdout)"
    )
    parser.add_argument("--json", action="store_true", help="the figures as JSON, no page")


def _local_path(location: str) -> Path | None:
    if location.startswith(("postgresql://", "postgres://")) or location == ":memory:":
        return None
    return Path(location.removeprefix("sqlite:").removeprefix("//"))


def run(args: argparse.Namespace) -> int:
    """Write the page (or print the JSON); 2 for an empty history or an unknown run."""
    config = settings(history=args.history, platform=args.platform)
    location = os.path.expanduser(str(config.get("history") or DEFAULT_HISTORY))
    path = _local_path(location)
    # opening it would create an empty one; os.path.isfile: a name too long is not a file
    if path is not None and not os.path.isfile(path):
        expected = "an existing history (SQLite file) or a postgresql:// URL"
        raise ResourceError("--history", location, f"{expected} (--history or $SEQERA_HISTORY)")
    since = None if args.since is None else parse_since(args.since)
    platform_file = config.get("platform")
    platform = platforms.load(platform_file) if platform_file else None
    history = open_history(location)
    try:
        report = build(history, args.runs, since=since, platform=platform,
                       source=redacted(location))  # fmt: skip
    finally:
        history.close()
    if args.json:
        text = json.dumps(document(report), indent=2) + "\n"
    else:
        from ..report import render  # the page's drawing: not imported for --json

        text = render(report)
    output = args.output or ("-" if args.json else "report.html")
    if output == "-":
        sys.stdout.write(text)
        return 0
    target = Path(output)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:  # a directory, a name too long, no permission
        raise ResourceError("--output", output, f"a file that can be written ({exc})") from None
    for line in headline(report):
        print(line)
    print(f"report: {target.resolve()}")
    return 0
