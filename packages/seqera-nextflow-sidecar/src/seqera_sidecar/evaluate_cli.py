"""``seqera-sidecar evaluate``: replay traces (:mod:`.evaluate`), or leave each out in turn
(:mod:`.lopo`), and print the tables in Markdown."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from seqera_core.errors import UsageError

from .evaluate import PREDICTORS, Sample, Score, TimeScore, evaluate, evaluate_time
from .lopo import Held, leave_one_out
from .trace import read_trace

__all__ = ["add_arguments", "command"]


def _sample(text: str) -> Sample:
    try:
        history, online = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected HISTORY,ONLINE (two counts, e.g. 12,28)"
        ) from None
    if history < 1 or online < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: both counts must be >= 1")
    return Sample(history, online)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``evaluate`` command's arguments."""
    parser.add_argument("trace", nargs="+",
                        help="trace files written with trace.raw = true (.csv/.gz)")  # fmt: skip
    parser.add_argument("--seed", type=int, action="append",
                        help="repeat for several (default: 0)")  # fmt: skip
    parser.add_argument("--predictor", action="append", choices=list(PREDICTORS),
                        help="repeat for several (default: all)")  # fmt: skip
    parser.add_argument("--leave-one-out", action="store_true",
                        help="score each trace with the right-sizer settings chosen on the "
                        "others (needs two traces or more)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="replays run at once")
    parser.add_argument("--sample", type=_sample, metavar="HISTORY,ONLINE",
                        help="per process, this many tasks of history and online instead of "
                        "30 %% / 70 %% (12,28: a pipeline with about a dozen runs)")  # fmt: skip


def command(args: argparse.Namespace) -> int:
    """Replay each trace (or leave each out, ``--leave-one-out``) and print the tables."""
    seeds = args.seed or [0]
    traces = {Path(path).name.split(".")[0]: read_trace(path) for path in args.trace}
    if len(traces) < len(args.trace):
        raise UsageError("two traces have the same file name: rename one")
    if args.leave_one_out:
        if len(traces) < 2:
            raise UsageError("--leave-one-out needs two traces or more")
        _print_held(leave_one_out(traces, seeds, jobs=max(1, args.jobs), sample=args.sample))
        return 0
    names = args.predictor or list(PREDICTORS)
    for trace, records in traces.items():
        for seed in seeds:
            print(f"{trace} (seed {seed})")
            print(
                "| predictor | online tasks | used GB-h | wasted GB-h | MAQ | retries | flagged |"
            )
            print("|---|---|---|---|---|---|---|")
            for name in names:
                score = evaluate(records, seed, name, args.sample)
                print(f"| {name} | {score.tasks} | {score.used_gbh:.2f} | "
                      f"{score.wasted_gbh:.2f} | {score.maq:.3f} | "
                      f"{_retries(score)} | {len(score.flagged)} |")  # fmt: skip
            print("\nTime limits\n" + _TIME_HEAD)
            for name in names:
                print(_time_row(name, evaluate_time(records, seed, name, args.sample)))
            print()
    return 0


_TIME_HEAD = ("| predictor | online tasks | none declared | declared h | limits h | run h | kills "
              "| killed twice | lost h |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip


def _retries(score: Score) -> str:
    return f"{score.retries} ({score.retry_share:.2%})"


def _time_row(name: str, time: TimeScore) -> str:
    return (f"| {name} | {time.tasks} | {time.undeclared} | {time.declared_hours:.1f} | "
            f"{time.limit_hours:.1f} | {time.run_hours:.1f} | {time.kills} "
            f"({time.kill_share:.2%}) | {time.killed_twice} | {time.lost_hours:.2f} |")  # fmt: skip


def _print_held(held: Sequence[Held]) -> None:
    print("Leave one pipeline out: each trace scored with the settings chosen on the others.")
    print("| trace | seed | settings (chosen on the others) | online tasks | max: wasted GB-h, "
          "MAQ, retries | right-sizer: wasted GB-h, MAQ, retries | less waste | "
          "flagged |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for h in held:
        most, ours = h.maximum, h.score
        less = "yes" if ours.wasted_gbh < most.wasted_gbh else "NO"
        print(f"| {h.trace} | {h.seed} | {h.chosen} | {ours.tasks} | {most.wasted_gbh:.2f}, "
              f"{most.maq:.3f}, {_retries(most)} | {ours.wasted_gbh:.2f}, {ours.maq:.3f}, "
              f"{_retries(ours)} | {less} | {', '.join(ours.flagged) or 0} |")  # fmt: skip
    print("\nTime limits (same settings)\n" + _TIME_HEAD.replace("predictor", "trace, seed"))
    for h in held:
        print(_time_row(f"{h.trace}, {h.seed}", h.time))
