"""Property tests over every input of the ``seqera`` command line: never a traceback.

Each subcommand's options and arguments, the files they read (platform, catalogue,
jobs file, history, config files) and the ``SEQERA_*`` variables get hostile values
(tests/hostile.py); the answer is exit 0 or 2, and a 2 names the flag or field and
the value. Runs in this process through ``seqera_core.cli.main``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from seqera_core.cli import main
from seqera_core.config import KEYS
from seqera_core.dialects.engines import ENGINES, GENERIC_KEYS
from seqera_core.history import TaskRecord, open_history
from tests.hostile import (
    BOUNDARIES,
    SETTINGS,
    Answer,
    arg_text,
    file_contents,
    invoke,
    place,
    scoped,
)

GENERIC = ("cpus", "memory", "time", "disk", "accelerator")
PLATFORM = """\
name: props
scheduler: slurm
default_queue: normal
queues:
  normal: {max_cpus: 8, max_memory: 64 GiB, max_walltime: 1d}
"""
JOBS = '[{"name": "a", "cpus": 1, "memory": "1 GB", "time": "1m"}]'  # seqera squash's
PLAN_JOBS = '[{"name": "a", "cpus": 1, "memory": "1 GB"}]'


def boundaries(**others: str) -> Callable[[Any], Any]:
    """Every value of hostile.BOUNDARIES as an explicit example (with ``others``)."""

    def add(test: Any) -> Any:
        for value in BOUNDARIES:
            test = example(value=value, **others)(test)
        return test

    return add


@pytest.fixture
def home() -> Iterator[Path]:
    # One folder per example would be cleaner, but hypothesis runs every example of a
    # test inside one fixture call; each example writes under its own subfolder instead.
    with tempfile.TemporaryDirectory(prefix="seqera-props-") as folder:
        yield Path(folder)


def seqera(argv: list[str], home: Path, environ: dict[str, str] | None = None) -> Answer:
    """``seqera argv`` with HOME and XDG_CONFIG_HOME in ``home`` and only ``environ`` set."""
    base = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg")}
    with scoped({**base, **(environ or {})}, home):
        return invoke(main, argv)


def fresh(home: Path) -> Path:
    folder = Path(tempfile.mkdtemp(dir=home))
    return folder


# --- explain and validate: every resource flag, --set, --label, --process ---------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("flag", GENERIC)
@boundaries(command="explain")
@settings(SETTINGS, max_examples=10)  # per flag and engine, besides the boundaries
@given(value=arg_text, command=st.sampled_from(["explain", "validate"]))
def test_a_resource_flag_is_used_or_refused_by_name(
    home: Path, engine: str, flag: str, value: str, command: str
) -> None:
    folder = fresh(home)
    platform = place(folder, "p.yaml", PLATFORM.encode())
    argv = [command, f"--engine={engine}", f"--{flag}={value}", f"--platform={platform}"]
    seqera(argv, home).check([f"--{flag}", GENERIC_KEYS[engine][flag]], value)


@SETTINGS
@given(engine=st.sampled_from(ENGINES), key=arg_text, value=arg_text)
def test_any_set_key_and_value_is_used_or_refused(
    home: Path, engine: str, key: str, value: str
) -> None:
    answer = seqera(["explain", f"--engine={engine}", f"--set={key}={value}"], home)
    # resourceLimits.memory=...: the key's first part is the directive named
    written = key.partition("=")[0].strip()
    head, dot, tail = written.partition(".")
    name = (head if dot and head and tail else written)[:30]  # as key_value and _nest cut it
    answer.check([name or "--set", "--set"])


@SETTINGS
@given(
    engine=st.sampled_from(ENGINES),
    label=arg_text | st.tuples(arg_text, arg_text).map("=".join),  # KEY=VALUE, both hostile
    process=arg_text,
    backend=st.sampled_from(["local", "slurm", "pbs", "torque", "sge", "ecs"]),
    squash=st.sampled_from(["off", "array", "squash"]),
)
# argv bytes that are not UTF-8 in a label, on each backend that encodes labels
@example(engine="nextflow", label="team=\udcff", process="p", backend="slurm", squash="off")
@example(engine="cwl", label="\udce9=x", process="\udcff", backend="pbs", squash="array")
@example(engine="snakemake", label="k=\udcff", process="p", backend="ecs", squash="off")
def test_labels_process_backend_and_squash_are_used_or_refused(
    home: Path, engine: str, label: str, process: str, backend: str, squash: str
) -> None:
    argv = ["explain", f"--engine={engine}", "--cpus=1", f"--label={label}",
            f"--process={process}", f"--backend={backend}", f"--squash={squash}"]  # fmt: skip
    seqera(argv, home).check(["--label", "label"], label)


# --- files: platform, catalogue, jobs ---------------------------------------------------

files = file_contents() | st.none()  # None: a directory where the file should be


@settings(SETTINGS, max_examples=30)
@given(contents=files, command=st.sampled_from(["explain", "validate"]))
def test_any_platform_file_is_read_or_refused(
    home: Path, contents: bytes | None, command: str
) -> None:
    path = place(fresh(home), "platform.yaml", contents)
    argv = [command, "--engine=nextflow", "--cpus=2", "--memory=4 GB", f"--platform={path}"]
    seqera(argv, home).check([path])


@settings(SETTINGS, max_examples=25)  # the planner's default catalogue: the slowest
@given(jobs=files, catalogue=files, platform=files, which=st.sampled_from(["jobs", "catalogue",
       "platform"]), lookahead=st.booleans())  # fmt: skip
def test_plan_reads_any_files_or_refuses_them_by_name(
    home: Path,
    jobs: bytes | None,
    catalogue: bytes | None,
    platform: bytes | None,
    which: str,
    lookahead: bool,
) -> None:
    folder = fresh(home)
    hostile = {"jobs": jobs, "catalogue": catalogue, "platform": platform}[which]
    good = {"jobs": PLAN_JOBS.encode(), "catalogue": None, "platform": PLATFORM.encode()}
    paths = {name: place(folder, f"{name}.yaml", hostile if name == which else good[name])
             for name in ("jobs", "platform")}  # fmt: skip
    argv = ["plan", paths["jobs"], f"--platform={paths['platform']}", "--json"]
    if which == "catalogue":
        argv.append(f"--catalogue={place(folder, 'catalogue.yaml', catalogue)}")
    if lookahead:
        argv.append("--lookahead")
    named = [str(folder), "JOBS.json", "--catalogue", "--platform"]
    seqera(argv, home).check(named)


@SETTINGS
@given(
    jobs=files,
    platform=files,
    max_jobs=arg_text,
    max_time=arg_text,
    cpus=arg_text,
    which=st.sampled_from(["jobs", "platform", "max_jobs", "max_time", "cpus"]),
)
def test_squash_reads_any_files_and_flags_or_refuses_them_by_name(
    home: Path,
    jobs: bytes | None,
    platform: bytes | None,
    max_jobs: str,
    max_time: str,
    cpus: str,
    which: str,
) -> None:
    folder = fresh(home)
    platform_file = place(folder, "p.yaml", platform if which == "platform" else PLATFORM.encode())
    argv = [
        "squash",
        place(folder, "jobs.json", jobs if which == "jobs" else JOBS.encode()),
        f"--platform={platform_file}",
    ]
    flags = {"max_jobs": max_jobs, "max_time": max_time, "cpus": cpus}
    if which in flags:
        argv.append(f"--{which.replace('_', '-')}={flags[which]}")
    named = {"jobs": [str(folder), "JOBS.json"], "platform": [str(folder)]}.get(
        which, [f"--{which.replace('_', '-')}", which, f"squash.{which}"]
    )
    value = flags.get(which)
    seqera(argv, home).check(named, value)


# --- seqera run: every flag (jobs that pass run locally: `true`) ------------------------

RUN_FLAGS = ("cpus", "memory", "time", "disk", "gpus", "label", "ecs", "name", "queue",
             "account", "machine-type", "image", "workdir")  # fmt: skip


@pytest.mark.parametrize("flag", RUN_FLAGS)
@boundaries()
@settings(SETTINGS, max_examples=8)  # per flag, besides the boundaries
@given(value=arg_text)
def test_run_uses_or_refuses_any_flag_value(home: Path, flag: str, value: str) -> None:
    answer = seqera(["run", f"--{flag}={value}", "--", "true"], home)
    if answer.code == 1:
        # The job itself may fail (e.g. a workdir that does not exist): its own exit code,
        # said in a sentence, never a traceback.
        assert "Traceback" not in answer.err, answer
        return
    answer.check([f"--{flag}", flag.replace("-", "_"), "ecs.", "cpus", "memory"], value)


# --- history: seqera run --history, seqera report --history and its other flags ---------


@SETTINGS
@given(contents=files | st.just(b"sqlite"), command=st.sampled_from(["run", "report"]))
def test_any_history_file_is_used_or_refused_by_name(
    home: Path, contents: bytes | None, command: str
) -> None:
    folder = fresh(home)
    if contents == b"sqlite":
        path = str(folder / "h.db")
        open_history(path).close()  # a real, empty history
    else:
        path = place(folder, "h.db", contents)
    argv = (["run", f"--history={path}", "--", "true"] if command == "run"
            else ["report", f"--history={path}", "--json"])  # fmt: skip
    seqera(argv, home).check(["--history", path, "history"])


@SETTINGS
@given(
    history=arg_text,
    since=arg_text,
    run=arg_text,
    output=arg_text,
    which=st.sampled_from(["history", "since", "run", "output"]),
)
def test_report_flags_are_used_or_refused_by_name(
    home: Path, history: str, since: str, run: str, output: str, which: str
) -> None:
    folder = fresh(home)
    good = str(folder / "h.db")
    store = open_history(good)
    store.record([TaskRecord("run-1", "t-1", "bwa", True, cpus=2, memory=2**30, time=60,
                             peak_memory=2**29, realtime=30.0, finished=1.8e9)])  # fmt: skip
    store.close()
    values = {"history": good, "since": None, "run": None, "output": "-"}
    values[which] = {"history": history, "since": since, "run": run, "output": output}[which]
    argv = ["report"] + [f"--{k}={v}" for k, v in values.items() if v is not None]
    with_output = "-o" if which == "output" else None
    answer = seqera(argv, folder if which == "output" else home)
    answer.check([f"--{which}", which, *([with_output] if with_output else [])], values[which])


# --- configuration: SEQERA_* variables and config files ---------------------------------

# A value for each setting, near its valid forms, to reach each key's validation.
settings_documents = st.dictionaries(
    st.sampled_from([*KEYS, "labels", "ecs", "squash", "resolver", "local", "unknown"]),
    st.none() | arg_text | st.integers() | st.floats() | st.lists(arg_text, max_size=3)
    | st.dictionaries(arg_text, arg_text, max_size=3),
    max_size=4,
)  # fmt: skip


@pytest.mark.parametrize("variable", sorted(KEYS.values()))
@boundaries(command="config")
@settings(SETTINGS, max_examples=8)  # per variable, besides the boundaries
@given(
    value=arg_text,
    command=st.sampled_from(["config", "explain", "validate", "plan", "squash", "report"]),
)
def test_any_seqera_variable_is_used_or_refused_by_name(
    home: Path, variable: str, value: str, command: str
) -> None:
    folder = fresh(home)
    platform = place(folder, "p.yaml", PLATFORM.encode())
    jobs = place(folder, "jobs.json", JOBS.encode())
    argv = {
        "config": ["config", "--json"],
        "explain": ["explain", "--engine=snakemake", "--cpus=1", f"--platform={platform}"],
        "validate": ["validate", "--engine=cwl", "--cpus=1", f"--platform={platform}"],
        "plan": ["plan", place(folder, "plan.json", PLAN_JOBS.encode())],
        "squash": ["squash", jobs],
        "report": ["report", "--json"],
    }[command]
    answer = seqera(argv, home, {variable: value.replace("\udc80", "?")})
    if command == "report" and answer.code == 2 and "--history" in answer.err:
        return  # no history where one was looked for: named, the variable had no say
    # A path too long names the setting it fills (history, platform).
    names = [variable, "--platform", "--history", "history:", "platform:"]
    answer.check(names, value.replace("\udc80", "?"))


@SETTINGS
@given(contents=file_contents(settings_documents) | st.none(),
       where=st.sampled_from(["seqera.yaml", ".seqera.yaml", "xdg/seqera/config.yaml"]),
       command=st.sampled_from(["config", "explain", "run"]))  # fmt: skip
def test_any_config_file_is_used_or_refused_by_name(
    home: Path, contents: bytes | None, where: str, command: str
) -> None:
    folder = fresh(home)
    (folder / "xdg" / "seqera").mkdir(parents=True)
    path = place(folder, where, contents)
    argv = {
        "config": ["config"],
        "explain": ["explain", "--engine=nextflow", "--memory=1 GB"],
        "run": ["run", "--", "true"],
    }[command]
    base = {"HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "xdg")}
    with scoped(base, folder):
        answer = invoke(main, argv)
    if answer.code == 1 and command == "run":
        assert "Traceback" not in answer.err, answer  # e.g. an unreachable resolver URL
        return
    answer.check([path, "$", "--platform", "history", "resolver", "backend", "ecs."])
