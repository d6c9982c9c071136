"""MkDocs hook: the reference pages are generated from the code at build time.

A page holds markers that this hook replaces, so the reference never drifts from what
the commands and settings really are:

- ``<!-- help: seqera run -->``: that command's ``--help``, run with this interpreter;
- ``<!-- settings: seqera -->``: seqera's configuration keys and their variables;
- ``<!-- settings: snakemake -->``: the Snakemake executor's ``--seqera-*`` settings.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

_MARKER = re.compile(r"<!-- (help|settings): ([^>]+?) -->")
# The commands are the scripts installed beside the interpreter that builds the docs.
_BIN = Path(sys.executable).parent


def _help(command: str) -> str:
    program, *rest = command.split()
    done = subprocess.run(
        [str(_BIN / program), *rest, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command} --help failed: {done.stderr[-2000:]}")
    return f"```text\n$ {command} --help\n{done.stdout.rstrip()}\n```"


def _seqera_settings() -> str:
    from seqera_core.config import DEFAULTS, KEYS

    rows = ["| key (`seqera.yaml`) | variable | default |", "|---|---|---|"]
    for key in sorted(set(KEYS) | set(DEFAULTS)):
        default = DEFAULTS.get(key)
        shown = "" if default in (None, "", [], {}) else f"`{default}`"
        variable = f"`{KEYS[key]}`" if key in KEYS else ""
        rows.append(f"| `{key}` | {variable} | {shown} |")
    return "\n".join(rows)


def _snakemake_settings() -> str:
    from snakemake_executor_plugin_seqera import ExecutorSettings

    rows = ["| flag | variable | what |", "|---|---|---|"]
    for item in dataclasses.fields(ExecutorSettings):
        if item.name.startswith("_"):
            continue
        text = " ".join(str(item.metadata.get("help", "")).split()).replace("|", "\\|")
        flag = "--seqera-" + item.name.replace("_", "-")
        rows.append(f"| `{flag}` | `SNAKEMAKE_SEQERA_{item.name.upper()}` | {text} |")
    return "\n".join(rows)


def _replace(match: re.Match[str]) -> str:
    kind, what = match.group(1), match.group(2).strip()
    if kind == "help":
        return _help(what)
    if what == "seqera":
        return _seqera_settings()
    if what == "snakemake":
        return _snakemake_settings()
    raise RuntimeError(f"unknown settings table {what!r}")


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _MARKER.sub(_replace, markdown)
