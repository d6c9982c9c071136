"""Property tests over ``seqera-sidecar``'s subcommands: resolve, config, cpus, evaluate.

Each option and each file read (the history, Nextflow trace files) gets hostile values
(tests/hostile.py); the answer is exit 0 or 2, never a traceback, and a 2 names the
option or the file. ``serve`` is not started here: it would serve until stopped; its
options are checked against what uvicorn accepts (its edge has its own property tests in
test_properties.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uvicorn.config import LOG_LEVELS

from seqera_sidecar.cli import _parser, main
from tests.hostile import SETTINGS, Answer, arg_text, file_contents, invoke, place, scoped

TRACE = b"task_id\tprocess\tstatus\texit\tmemory\tpeak_rss\trealtime\trchar\n"


@pytest.fixture
def home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sidecar-props-") as folder:
        yield Path(folder)


def sidecar(argv: list[str], home: Path) -> Answer:
    folder = Path(tempfile.mkdtemp(dir=home))
    with scoped({"HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "xdg")}, folder):
        return invoke(main, argv)


@SETTINGS
@given(flag=st.sampled_from(["cpus", "memory", "time", "attempt", "process", "margin",
                             "history"]), value=arg_text,
       resolver=st.sampled_from(["predictive", "max"]))  # fmt: skip
def test_resolve_uses_or_refuses_any_option(
    home: Path, flag: str, value: str, resolver: str
) -> None:
    argv = ["resolve", "--process=p", f"--resolver={resolver}", f"--{flag}={value}"]
    sidecar(argv, home).check([f"--{flag}", flag], value)


@SETTINGS
@given(command=st.sampled_from(["config", "cpus", "resolve"]),
       contents=file_contents() | st.none(), margin=arg_text)  # fmt: skip
def test_any_history_file_is_used_or_refused_by_name(
    home: Path, command: str, contents: bytes | None, margin: str
) -> None:
    path = place(Path(tempfile.mkdtemp(dir=home)), "h.db", contents)
    argv = [command, f"--history={path}"]
    if command != "cpus":
        argv.append(f"--margin={margin}")
    if command == "resolve":
        argv.append("--process=p")
    sidecar(argv, home).check([path, "history", "--margin"])


@settings(SETTINGS, max_examples=30)
@given(contents=file_contents() | st.just(TRACE) | st.binary(max_size=300).map(TRACE.__add__)
       | st.none(), seed=arg_text)  # fmt: skip
def test_evaluate_reads_any_trace_or_refuses_it_by_name(
    home: Path, contents: bytes | None, seed: str
) -> None:
    path = place(Path(tempfile.mkdtemp(dir=home)), "trace.txt", contents)
    sidecar(["evaluate", path, f"--seed={seed}"], home).check([path, "--seed", "trace"])


@SETTINGS
@given(flag=st.sampled_from(["port", "max-body", "log-level", "host", "allow-host", "state",
                             "resolver", "backend"]), value=arg_text)  # fmt: skip
def test_serve_options_are_refused_by_name_or_in_what_uvicorn_takes(flag: str, value: str) -> None:
    # serve itself would serve until stopped: its parser is checked against what uvicorn
    # accepts (its own LOG_LEVELS, bind()'s port range) and the edge's body limit.
    answer = invoke(lambda argv: _parser().parse_args(argv) and 0, ["serve", f"--{flag}={value}"])
    answer.check([f"--{flag}"], value.lower() if flag == "log-level" else value)  # as uvicorn
    if answer.code == 0:
        args = _parser().parse_args(["serve", f"--{flag}={value}"])
        assert 0 <= args.port <= 65535
        assert args.max_body >= 1
        assert args.log_level in LOG_LEVELS
