"""``seqera config``: the merged configuration and where each value came from."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..backends.registry import BACKENDS
from ..config import KEYS, Config
from ..redaction import redacted
from ._args import key_value, settings

__all__ = ["add_parser", "run"]

_SECRET = {"resolver.token"}
_URLS = ("history", "resolver.url")


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
    parser.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="a run label"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _rows(config: Config) -> dict[str, tuple[Any, str]]:
    # One row per setting and one per label, so each label shows its own source.
    rows: dict[str, tuple[Any, str]] = {}
    for key, value in config.values.items():
        if key == "labels":
            rows.update(
                {f"labels.{k}": (v, config.sources[f"labels.{k}"]) for k, v in value.items()}
            )
        else:
            if key in _SECRET:
                value = "***"
            elif key in _URLS:  # a password in a URL is a secret too
                value = redacted(str(value))
            rows[key] = (value, config.sources[key])
    return dict(sorted(rows.items()))


def run(args: argparse.Namespace) -> int:
    """Print each setting, its value (secrets masked) and its source."""
    labels = dict(key_value("--label", text) for text in args.label) or None
    rows = _rows(settings(backend=args.backend, platform=args.platform, labels=labels))
    if args.json:
        document = {k: {"value": v, "source": source} for k, (v, source) in rows.items()}
        print(json.dumps(document, indent=2, sort_keys=True))
        return 0
    shown = {key: (json.dumps(value), source) for key, (value, source) in rows.items()}
    width = max(map(len, shown), default=0)
    value_width = max((len(text) for text, _ in shown.values()), default=0)
    for key, (text, source) in shown.items():
        print(f"{key:<{width}}  {text:<{value_width}}  ({source})")
    return 0
