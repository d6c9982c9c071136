"""A job's argv: Snakemake's own command line, as argv where a fork can start it."""

from __future__ import annotations

import shlex
import sys

from snakemake_executor_plugin_seqera._jobcommand import command

LINE = f"{sys.executable} -m snakemake --target-jobs 'a:i=1' --scheduler ilp --cores all"


def test_a_forkable_job_runs_the_greedy_scheduler_and_nothing_else_changes() -> None:
    argv = command(LINE, squashed=True)
    expected = shlex.split(LINE)
    expected[expected.index("ilp")] = "greedy"  # one job: no solver process to choose it
    assert list(argv) == expected


def test_a_chosen_greedy_scheduler_and_shell_commands_are_left_alone() -> None:
    greedy = LINE.replace("ilp", "greedy")
    assert list(command(greedy, squashed=True)) == shlex.split(greedy)
    assert command(LINE, squashed=False) == ("/bin/sh", "-c", LINE)
    piped = f"{LINE} | tee log"
    assert command(piped, squashed=True) == ("/bin/sh", "-c", piped)
