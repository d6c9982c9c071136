"""The routing decisions read back: from the routing policy's own record (``choose``), so
a change of what it keeps that the report cannot read fails here."""

from __future__ import annotations

import json
import math

import pytest

from seqera_core.backends.route import Option, choose, said
from seqera_core.report._reasons import Counted, Reason, parse, phrase, short, summarise

NO_FILES = "no shared file system, and the engine does not stage this job's files"


def test_a_finish_decision_gives_every_candidates_estimates_and_refusal() -> None:
    choice = choose([Option("local", None, 0.3, 1.2, 0.0), Option("slurm", None, 5.0, 1.2, 0.01),
                     Option("ecs", NO_FILES)], "finish")  # fmt: skip
    reason = parse(choice.record)
    assert reason == Reason(
        "finish", "local",
        start={"local": 0.3, "slurm": 5.0},
        finish={"local": pytest.approx(1.5), "slurm": pytest.approx(6.2)},
        cost={"local": 0.0, "slurm": 0.01},
        refused={"ecs": NO_FILES},
    )  # fmt: skip
    assert phrase(reason) == "finishes first (ecs: no shared files)"
    # the words stay the reason the labels carry
    assert said(choice.record) == choice.reason
    assert said("not a decision") == "not a decision"


def test_a_cost_decision_is_the_cheapest() -> None:
    choice = choose([Option("local", None, 60, 10, 0.0), Option("slurm", None, 5, 10, 0.0125)],
                    "cost")  # fmt: skip
    reason = parse(choice.record)
    assert reason is not None and reason.chosen == "local"
    assert reason.cost == {"local": 0.0, "slurm": 0.0125}
    assert phrase(reason) == "cheapest"


def test_a_ceiling_decision_is_the_cheapest_or_worth_its_cost() -> None:
    options = [Option("local", None, 900, 600, 0.0), Option("slurm", None, 0, 600, 0.5)]
    # 0.5 more to finish 900 s sooner: 2.0 per hour saved
    worth = parse(choose(options, "cost-per-hour-saved", ceiling=2.5).record)
    assert worth is not None and worth.chosen == "slurm"
    assert phrase(worth) == "sooner, worth its cost"
    cheap = parse(choose(options, "cost-per-hour-saved", ceiling=1.5).record)
    assert cheap is not None and cheap.chosen == "local"
    assert phrase(cheap) == "cheapest"


def test_estimates_are_exact_and_never_is_no_estimate() -> None:
    choice = choose([Option("local", None, 1300.25, 1.0), Option("slurm", None, math.inf, 1.0)],
                    "finish")  # fmt: skip
    assert "1.3e+03 s" in choice.reason  # the words round; the record does not
    json.loads(choice.record, parse_constant=lambda c: pytest.fail(f"{c} in the record"))
    reason = parse(choice.record)
    assert reason is not None
    assert reason.finish == {"local": 1301.25}
    assert reason.refused == {"slurm": "never starts"}
    assert phrase(reason) == "the only backend that could run it (slurm: never starts)"


def test_pinned_and_only_able_read_as_such() -> None:
    pin = "rule qc is pinned to local"
    pinned = choose([Option("local", None, 0.3, 1.0), Option("slurm", pin)], "finish").record
    assert phrase(parse(pinned)) == "pinned to it by the user"
    wide = choose([Option("local", "40 cores asked, its largest node has 4"),
                   Option("slurm", None, 5, 600)], "finish").record  # fmt: skip
    assert phrase(parse(wide)) == "the only backend that could run it (local: too many cores)"


def test_a_refusal_holding_a_semicolon_stays_one() -> None:
    down = "sinfo did not answer: exit 1; slurm_load_partitions: 2 errors"
    choice = choose([Option("local", None, 0.3, 1.0), Option("slurm", down),
                     Option("ecs", None, 60, 1.0, 0.1)], "finish")  # fmt: skip
    reason = parse(choice.record)
    assert reason is not None
    assert reason.refused == {"slurm": down}
    assert reason.finish == {"local": 1.3, "ecs": 61.0}


def test_what_is_not_a_decision_reads_as_none() -> None:
    for text in ("", "local", "finish: local finish in 1 s (slurm 6 s)", "[]", "{}",
                 '{"objective": "finish", "backend": "local"}',
                 '{"objective": "finish", "backend": "local", "options": [{"start": 1}]}',
                 '{"objective": "finish", "backend": "local", "options": []}'):  # fmt: skip
        assert parse(text) is None, text
    assert phrase(None) == "not routed"


def test_refusals_in_a_few_words() -> None:
    assert short("2 GPUs asked, it has none") == "no GPU"
    assert short("1.5e+03 GiB asked, its largest node has 512") == "too much memory"
    assert short("7200 s asked, its time limit is 3600 s") == "over its time limit"
    assert short("has no queue 'long'") == "no such queue"
    assert short("x" * 200) == "x" * 77 + "..."


def test_summarise_counts_the_same_reason_together_most_first() -> None:
    fast = parse(choose([Option("local", None, 0.3, 1.0), Option("slurm", None, 5, 1.0)],
                        "finish").record)  # fmt: skip
    later = parse(choose([Option("local", None, 0.3, 9.0), Option("slurm", None, 5, 9.0)],
                         "finish").record)  # fmt: skip
    assert summarise([fast, None, later, fast]) == (
        Counted(3, "finishes first"), Counted(1, "not routed"),
    )  # fmt: skip
