"""``seqera config``: the merged configuration and where each value came from."""

from __future__ import annotations

import argparse
import json

from ..config import BACKENDS, KEYS
from ._args import settings

__all__ = ["add_parser", "run"]

_SECRET = {"resolver.token"}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``seqera config``."""
    parser = commands.add_parser(
        "config",
        help="show the merged configuration and the source of each value",
        description=(
            "Layers, each overriding the one before: $XDG_CONFIG_HOME/seqera/config.yaml "
            "(or ~/.config/seqera/config.yaml), ./seqera.yaml or ./.seqera.yaml, the "
            f"environment ({', '.join(KEYS.values())}), then these flags."
        ),
    )
    parser.set_defaults(run=run)
    parser.add_argument("--backend", choices=BACKENDS)
    parser.add_argument("--platform", metavar="FILE")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Print each setting, its value (secrets masked) and its source."""
    config = settings(backend=args.backend, platform=args.platform)
    shown = {k: "***" if k in _SECRET else v for k, v in sorted(config.values.items())}
    if args.json:
        document = {k: {"value": v, "source": config.sources[k]} for k, v in shown.items()}
        print(json.dumps(document, indent=2, sort_keys=True))
        return 0
    width = max(map(len, shown), default=0)
    for key, value in shown.items():
        print(f"{key:<{width}}  {json.dumps(value)}  ({config.sources[key]})")
    return 0
