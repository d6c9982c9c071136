"""``seqera plan``: the jobs file, catalogue choice, text and JSON output, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seqera_core.cli import main
from seqera_core.cli.plan import plan_document
from seqera_core.planning import catalogue as catalogues
from seqera_core.planning._planner import schedule
from seqera_core.planning.jobsfile import parse_jobs
from seqera_core.units import GIB

CATALOGUE = """\
date: 2026-11
source: test prices
instances:
  small: {vcpus: 2, memory: 4 GiB, price: 0.1}
  big:   {vcpus: 8, memory: 32 GiB, price: 0.4}
  gpu:   {vcpus: 4, memory: 16 GiB, gpus: 1, price: 1.0}
"""
JOBS = [
    {"name": "c", "cpus": 2, "memory": "4 GiB"},
    {"name": "a", "cpus": 6, "memory": "8 GiB"},
    {"name": "b", "cpus": 2, "memory": 4 * GIB},
    {"name": "d", "cpus": 1, "memory": "12 GiB"},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    catalogue = tmp_path / "catalogue.yaml"
    catalogue.write_text(CATALOGUE)
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps(JOBS))
    return jobs, catalogue


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["plan", *argv, "--json"]) == 0
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return document


def test_json_plan(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    jobs, catalogue = files
    doc = _plan(capsys, str(jobs), "--catalogue", str(catalogue))
    instances = doc["instances"]
    assert isinstance(instances, list)
    assert [(i["type"], i["jobs"]) for i in instances] == [
        ("big", ["a", "d"]),
        ("small", ["c"]),
        ("small", ["b"]),
    ]
    assert instances[0]["used"] == {"cpus": 7.0, "memory_bytes": 20 * GIB, "gpus": 0}
    assert instances[0]["utilisation"] == {"cpus": 7 / 8, "memory": 20 / 32, "gpus": None}
    assert doc["hourly_cost"] == pytest.approx(0.6)
    # 11 cpus at 0.05 (small and big) = 0.55; 28 GiB at 0.0125 (big) = 0.35
    assert doc["lower_bound"] == {
        "hourly": pytest.approx(0.55),
        "dimension": "cpus",
        "per_dimension": {"cpus": pytest.approx(0.55), "memory": pytest.approx(0.35)},
    }
    assert doc["cost_over_bound"] == pytest.approx(0.6 / 0.55)
    assert doc["catalogue"] == {
        "source": str(catalogue),
        "date": "2026-11",
        "description": "test prices",
    }


def test_text_plan(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    jobs, catalogue = files
    assert main(["plan", str(jobs), "--catalogue", str(catalogue)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"catalogue: {catalogue} (2026-11)"
    assert lines[2].split() == [
        "1",
        "big",
        "0.4000",
        "7/8",
        "88%",
        "20",
        "GiB/32",
        "GiB",
        "62%",
        "-",
        "a,",
        "d",
    ]
    assert lines[-2] == "3 instances for 4 jobs: 0.6000 per hour"
    assert lines[-1] == "lower bound: 0.5500 per hour (cpus); the plan costs 1.091 x the bound"


def test_the_shipped_catalogue_is_the_default(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    jobs, _ = files
    doc = _plan(capsys, str(jobs))
    assert doc["catalogue"] == {
        "source": "seqera_core/data/ec2-us-east-1-2026-11.yaml",
        "date": "2026-11",
        "description": "AWS EC2 on-demand pricing, us-east-1, Linux, USD per hour",
    }


def test_a_platform_supplies_the_instances(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    jobs, _ = files
    platform = tmp_path / "p.yaml"
    platform.write_text(
        "scheduler: slurm\nqueues: {normal: {}}\n"
        "instances: {node: {vcpus: 16, memory: 64 GiB, price: 1.5}}\n"
    )
    doc = _plan(capsys, str(jobs), "--platform", str(platform))
    instances = doc["instances"]
    assert isinstance(instances, list)
    assert [(i["type"], i["jobs"]) for i in instances] == [("node", ["c", "a", "b", "d"])]


def test_hint_errors_name_job_type_and_what_is_missing(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, catalogue = files
    jobs = tmp_path / "hinted.json"
    jobs.write_text(
        json.dumps([{"name": "x", "cpus": 4, "memory": "1 GB", "instance_type": "small"}])
    )
    assert main(["plan", str(jobs), "--catalogue", str(catalogue)]) == 2
    err = capsys.readouterr().err
    assert "job x: instance_type: 'small'" in err and "4 vCPUs (it has 2)" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "line 1: 'Expecting property name enclosed in double quotes'"),
        ('{"name": "a"}', "a JSON list of jobs"),
        ('[{"name": "a", "cpus": 1}]', "jobs[0].memory: None is not valid; expected a value"),
        ('[{"name": "a", "cpus": 1, "memory": "4gb"}]', "jobs[0].memory: '4gb' is not valid"),
        ('[{"name": "a", "cpus": -1, "memory": 5}]', "jobs[0].cpus: -1 is not valid"),
        ('[{"name": "a", "cpus": 1, "memory": 5, "gpus": 1.5}]', "jobs[0].gpus: 1.5 is not valid"),
        ('[{"name": "a", "cpus": 1, "memory": 5, "mem": 5}]', "jobs[0].mem: 5 is not valid"),
        ('[{"name": "a", "cpus": 1, "memory": 5}, {"name": "a", "cpus": 1, "memory": 9}]',
         "jobs[1].name: 'a'"),
        ('[{"name": "a", "cpus": 99, "memory": 5}]', "job a: no instance type of"),
    ],
)  # fmt: skip
def test_bad_jobs_exit_2_naming_the_field(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    content: str, message: str,
) -> None:  # fmt: skip
    _, catalogue = files
    jobs = tmp_path / "bad.json"
    jobs.write_text(content)
    assert main(["plan", str(jobs), "--catalogue", str(catalogue)]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_jobs_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "/nonexistent/jobs.json"]) == 2
    assert "JOBS.json: '/nonexistent/jobs.json' is not valid" in capsys.readouterr().err


def test_the_installed_command_finds_the_shipped_catalogue(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    # a fresh process in another directory: the catalogue is package data, not a repo path
    jobs, _ = files
    result = subprocess.run(
        [sys.executable, "-m", "seqera_core.cli", "plan", str(jobs), "--json"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert json.loads(result.stdout)["catalogue"]["date"] == "2026-11"


def test_lookahead_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalogue = tmp_path / "c.yaml"
    catalogue.write_text(
        "instances:\n"
        "  compute: {vcpus: 8, memory: 8 GiB, price: 0.3}\n"
        "  memory: {vcpus: 2, memory: 32 GiB, price: 0.4}\n"
        "  general: {vcpus: 8, memory: 40 GiB, price: 0.5}\n"
    )
    jobs = tmp_path / "j.json"
    jobs.write_text(
        json.dumps(
            [
                {"name": "m", "cpus": 1, "memory": "30 GiB"},
                {"name": "c1", "cpus": 7, "memory": "2 GiB"},
                {"name": "c2", "cpus": 3, "memory": "4 GiB"},
            ]
        )
    )
    seed = _plan(capsys, str(jobs), "--catalogue", str(catalogue))
    better = _plan(capsys, str(jobs), "--catalogue", str(catalogue), "--lookahead")
    assert seed["hourly_cost"] == pytest.approx(1.0)
    assert better["hourly_cost"] == pytest.approx(0.8)
    instances = better["instances"]
    assert isinstance(instances, list)
    assert [(i["type"], i["jobs"]) for i in instances] == [
        ("general", ["m", "c1"]),
        ("compute", ["c2"]),
    ]


# --- input past Python's own limits (issue 20, defect 11) ----------------------------

DIGITS = "9" * 5000


@pytest.mark.parametrize("command", ["plan", "squash"])
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (f'[{{"name": "a", "cpus": {DIGITS}, "memory": 5, "time": "1m"}}]',
         "a number too long to read"),
        ("[" * 100_000 + "]" * 100_000, "nested too deep to read"),
        (f'[{{"name": "a", "cpus": 1, "memory": "{DIGITS} GB", "time": "1m"}}]',
         "jobs[0].memory: '99999999999999999999... (5003 characters)' is not valid"),
        (f'[{{"name": "a", "cpus": {DIGITS[:4000]}, "memory": "1 GB", "time": "1m"}}]',
         "jobs[0].cpus: 9999"),
        ('[{"name": "a", "cpus": 1e400, "memory": "1 GB", "time": "1m"}]',
         "jobs[0].cpus: inf is not valid"),
    ],
)  # fmt: skip
def test_numbers_and_nesting_past_the_reader_limits_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, content: str, message: str
) -> None:
    jobs = tmp_path / "jobs.json"
    jobs.write_text(content.replace(', "time": "1m"', "") if command == "plan" else content)
    assert main([command, str(jobs)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err) < 5000


def test_a_huge_memory_in_bytes_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = tmp_path / "jobs.json"
    jobs.write_text(f'[{{"name": "a", "cpus": 1, "memory": {DIGITS[:4000]}}}]')
    assert main(["plan", str(jobs)]) == 2
    assert "jobs[0].memory: 9999" in capsys.readouterr().err


def test_the_json_writer_writes_what_json_dumps_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalogue = tmp_path / "c.yaml"
    catalogue.write_text(
        "instances:\n"
        "  small: {vcpus: 2, memory: 4 GiB, price: 0.1}\n"
        "  half: {vcpus: 0.5, memory: 1 GiB, price: 0.0333}\n"
        "  'gpu%s%%': {vcpus: 4, memory: 16 GiB, gpus: 2, price: 1.0}\n"
    )
    # a % in names: the writer fills a per-type %-template
    names = ['"instances": []', "naïve ✓", 'quo"te\\', "tab\there", "a%s%%"]
    jobs = [
        {"name": n, "cpus": c, "memory": m, "gpus": g}
        for n, c, m, g in zip(
            names, [0.1, 0.5, 1.5, 1, 2], [1, 2**30, 3 * 2**30, 5, 7], [0, 0, 1, 0, 2], strict=True
        )
    ]
    path = tmp_path / "j.json"
    path.write_text(json.dumps(jobs))
    assert main(["plan", str(path), "--catalogue", str(catalogue), "--json"]) == 0
    out = capsys.readouterr().out
    plan = schedule(catalogues.load(catalogue), parse_jobs(jobs, str(path)))
    assert out == json.dumps(plan_document(plan), indent=2, sort_keys=True) + "\n"
    assert len(json.loads(out)["instances"]) == len(plan.instances) >= 2


# what `seqera plan` must not load: other subcommands' backends, the wire format's
# converters, the report, the HTTP and AWS clients (start-up counts in the 2 s budget)
_NOT_FOR_PLAN = (
    "cattrs",
    "httpx",
    "boto3",
    "seqera_core.backends.local._backend",
    "seqera_core.backends.batch.slurm",
    "seqera_core.cli.run",
    "seqera_core.cli.explain",
    "seqera_core.report",
    "seqera_core.wire",
)


def test_plan_loads_only_what_it_uses(files: tuple[Path, Path]) -> None:
    jobs, _ = files
    script = (
        "import sys\n"
        "from seqera_core.cli import main\n"
        f"assert main(['plan', {str(jobs)!r}]) == 0\n"
        f"print('loaded', sorted(m for m in sys.modules if m.startswith({_NOT_FOR_PLAN!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "loaded []"


def test_help_still_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    for name in ("explain", "run", "validate", "config", "plan", "squash", "report"):
        assert name in listed
