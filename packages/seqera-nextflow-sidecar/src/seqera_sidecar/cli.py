"""``seqera-sidecar serve|resolve|config|evaluate``: the service, Nextflow's hooks, replays."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from seqera_core import platforms
from seqera_core.backends import BACKENDS, Backend, open_backend, squash_policy
from seqera_core.config import load_config
from seqera_core.dialects.nextflow import request_from_directives
from seqera_core.errors import SeqeraError, UsageError
from seqera_core.history import History, open_history
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import HistoryResolver, PredictiveResolver, Resolver, resolve

from .nextflow_config import directives, process_config

__all__ = ["main"]

DEFAULT_HISTORY = "~/.seqera/history.db"


def _history(args: argparse.Namespace) -> History:
    location = args.history or os.environ.get("SEQERA_HISTORY") or DEFAULT_HISTORY
    return open_history(os.path.expanduser(location))


def _resolver(args: argparse.Namespace, history: History) -> Resolver:
    if args.resolver == "max":
        return HistoryResolver(history, margin=args.margin)
    return PredictiveResolver(history, apply_cpus=args.apply_cpus)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _backend(name: str, jobs: Path) -> Backend:
    if name == "local":
        return open_backend(name, workdir=jobs)
    config = load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home())
    if name == "ecs":
        return open_backend(name, **config.section("ecs"))
    # arrays or squashed allocations when seqera config asks (squash.* / $SEQERA_SQUASH_*)
    platform = platforms.load(config.get("platform")) if config.get("platform") else None
    return open_backend(name, work_dir=jobs, squash=squash_policy(config, platform))


def _serve(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("SEQERA_SIDECAR_TOKEN") or None
    if not _loopback(args.host) and token is None:
        raise UsageError(
            f"--host: {args.host!r} is reachable from other machines; set a token "
            "(--token or $SEQERA_SIDECAR_TOKEN) or listen on 127.0.0.1"
        )
    import uvicorn

    from .app import create_app
    from .runs import Dispatcher

    history = _history(args)
    resolvers: list[Resolver] = [_resolver(args, history)]
    dispatcher = None
    if args.backend:
        state = Path(os.path.expanduser(args.state))
        state.parent.mkdir(parents=True, exist_ok=True)
        backend = _backend(args.backend, state.parent / "jobs")
        dispatcher = Dispatcher(backend, state, resolvers=resolvers, history=history)
    app = create_app(history, token=token, resolvers=resolvers, dispatcher=dispatcher)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _resolve(args: argparse.Namespace) -> int:
    given = {"cpus": args.cpus, "memory": args.memory, "time": args.time}
    request = request_from_directives(
        {k: v for k, v in given.items() if v is not None},
        process=args.process,
        attempt=args.attempt,
    )
    history = _history(args)
    resolution = resolve(request, [_resolver(args, history)], defaults=DEFAULTS)
    for key, value in directives(resolution.effective).items():
        print(f"{key} {value}")
    print(f"// from {resolution.resolver}" + "".join(f"; {n}" for n in resolution.notes))
    return 0


def _config(args: argparse.Namespace) -> int:
    history = _history(args)
    text = process_config(history, HistoryResolver(history, margin=args.margin))
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def _cpus(args: argparse.Namespace) -> int:
    wasted = [use for use in _history(args).cpu_use() if use.unused > 0]
    if not wasted:
        print("every process used the cores it reserved")
        return 0
    print("| process | runs | cpus reserved | most busy | never used |\n|---|---|---|---|---|")
    for use in sorted(wasted, key=lambda u: -u.unused):
        print(
            f"| {use.process} | {use.runs} | {use.reserved:g} | {use.busy:.2f} | {use.unused:g} |"
        )
    print("(apply with: seqera-sidecar serve --apply-cpus)")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import command

    return command(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seqera-sidecar", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    from .evaluate import add_arguments

    evaluate = commands.add_parser("evaluate", help="replay Nextflow traces against predictors")
    add_arguments(evaluate)
    evaluate.set_defaults(run=_evaluate)
    cpus = commands.add_parser("cpus", help="processes that never use the cores they reserve")
    cpus.add_argument("--history", help="SQLite path or sqlite:/// URL")
    cpus.set_defaults(run=_cpus)
    for name, helptext in (("serve", "run the HTTP service"),
                           ("resolve", "effective resources of one process"),
                           ("config", "a Nextflow config from the history")):  # fmt: skip
        sub = commands.add_parser(name, help=helptext)
        if name != "config":  # a static config has no input sizes: always the maximum
            sub.add_argument("--resolver", choices=("predictive", "max"), default="predictive",
                             help="predictive (learns from input sizes, default) or max "
                             "(largest use seen x --margin)")  # fmt: skip
            sub.add_argument("--apply-cpus", action="store_true",
                             help="predictive: cpus = most cores ever busy")  # fmt: skip
        sub.add_argument("--history", help=f"SQLite path, sqlite:/// or postgresql:// URL (default "
                         f"$SEQERA_HISTORY or {DEFAULT_HISTORY})")  # fmt: skip
        sub.add_argument("--margin", type=float, default=1.2,
                         help="max: multiplier on the largest use (default 1.2)")  # fmt: skip
        sub.set_defaults(run={"serve": _serve, "resolve": _resolve, "config": _config}[name])
        if name == "serve":
            sub.add_argument("--host", default="127.0.0.1")
            sub.add_argument("--port", type=int, default=8080)
            sub.add_argument("--token", help="bearer token (or $SEQERA_SIDECAR_TOKEN)")
            sub.add_argument("--log-level", default="warning")
            sub.add_argument(
                "--backend",
                choices=BACKENDS,
                help="dispatch tasks of runs to this backend (default: none)",
            )
            sub.add_argument("--state", default="~/.seqera/sidecar-runs.db",
                             help="SQLite file for runs and tasks (jobs/ beside it)")  # fmt: skip
        elif name == "resolve":
            sub.add_argument("--process", required=True, help="the process name")
            sub.add_argument("--cpus", help="as in the process: 2")
            sub.add_argument("--memory", help="as in the process: '4 GB'")
            sub.add_argument("--time", help="as in the process: '1h 30m'")
            sub.add_argument("--attempt", type=int, default=1)
        else:
            sub.add_argument("--output", "-o", help="file to write (default: stdout)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 2 on invalid input, 1 on other errors."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except UsageError as exc:
        print(f"seqera-sidecar: {exc}", file=sys.stderr)
        return 2
    except SeqeraError as exc:
        print(f"seqera-sidecar: {exc}", file=sys.stderr)
        return 1
