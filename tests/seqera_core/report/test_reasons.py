"""The routing reasons read back: from the routing policy's own text (``choose``), so a
change of its wording that the report cannot read fails here."""

from __future__ import annotations

import math

from seqera_core.backends.registry import BACKENDS
from seqera_core.backends.route import Option, choose
from seqera_core.report._reasons import Counted, Reason, parse, phrase, short, summarise

NO_FILES = "no shared file system, and the engine does not stage this job's files"


def test_a_finish_decision_gives_every_candidates_estimate_and_refusal() -> None:
    text = choose([Option("local", None, 0.3, 1.2, 0.0), Option("slurm", None, 5.0, 1.2, 0.01),
                   Option("ecs", NO_FILES)], "finish").reason  # fmt: skip
    reason = parse(text, BACKENDS)
    assert reason == Reason("finish", "local", finish={"local": 1.5, "slurm": 6.2},
                            refused={"ecs": NO_FILES})  # fmt: skip
    assert phrase(reason) == "finishes first (ecs: no shared files)"


def test_a_cost_decision_gives_costs_not_times() -> None:
    text = choose([Option("local", None, 60, 10, 0.0), Option("slurm", None, 5, 10, 0.0125)],
                  "cost").reason  # fmt: skip
    reason = parse(text)
    assert reason == Reason("cost", "local", cost={"local": 0.0, "slurm": 0.0125})
    assert phrase(reason) == "cheapest"


def test_numbers_in_exponent_form_and_never_are_read() -> None:
    text = choose([Option("local", None, 1300, 1.0), Option("slurm", None, math.inf, 1.0)],
                  "finish").reason  # fmt: skip
    assert "1.3e+03 s" in text and "slurm never" in text
    reason = parse(text)
    assert reason is not None
    assert reason.finish == {"local": 1300.0}  # as written: three significant digits
    assert reason.refused == {"slurm": "never starts"}
    assert phrase(reason) == "the only backend that could run it (slurm: never starts)"


def test_pinned_and_only_able_read_as_such() -> None:
    pin = "rule qc is pinned to local"
    pinned = choose([Option("local", None, 0.3, 1.0), Option("slurm", pin)], "finish").reason
    assert phrase(parse(pinned)) == "pinned to it by the user"
    wide = choose([Option("local", "40 cores asked, its largest node has 4"),
                   Option("slurm", None, 5, 600)], "finish").reason  # fmt: skip
    assert phrase(parse(wide)) == "the only backend that could run it (local: too many cores)"


def test_a_refusal_holding_a_semicolon_stays_one_when_the_names_are_known() -> None:
    down = "sinfo did not answer: exit 1; slurm_load_partitions: 2 errors"
    text = choose([Option("local", None, 0.3, 1.0), Option("slurm", down),
                   Option("ecs", None, 60, 1.0, 0.1)], "finish").reason  # fmt: skip
    reason = parse(text, ["local", "slurm", "ecs"])
    assert reason is not None
    assert reason.refused == {"slurm": down}
    assert reason.finish == {"local": 1.3, "ecs": 61.0}


def test_what_is_not_a_reason_reads_as_none() -> None:
    for text in ("", "local", "finish: local", "finish: local finish in soon",
                 "cost: local cost cheap", "finish: local finish in 1 s (slurm soon)"):  # fmt: skip
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
                        "finish").reason)  # fmt: skip
    later = parse(choose([Option("local", None, 0.3, 9.0), Option("slurm", None, 5, 9.0)],
                         "finish").reason)  # fmt: skip
    assert summarise([fast, None, later, fast]) == (
        Counted(3, "finishes first"), Counted(1, "not routed"),
    )  # fmt: skip
