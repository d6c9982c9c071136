"""``seqera-sidecar serve|resolve|config|evaluate``: the service, Nextflow's hooks, replays."""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seqera_core.backends.registry import BACKENDS
from seqera_core.config import Config, load_config
from seqera_core.dialects.nextflow import request_from_directives
from seqera_core.documents import read_bounded
from seqera_core.errors import ResourceError, SeqeraError, UsageError
from seqera_core.history import DEFAULT_HISTORY, History
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import MaximumResolver, PredictiveResolver, Resolver, resolve
from seqera_core.session import Session

from .nextflow_config import directives, process_config

__all__ = ["main"]


def _settings(args: argparse.Namespace) -> Config:
    """seqera config (``seqera.yaml``, ``$SEQERA_*``) with this command's flags on top; the
    history defaults to ``~/.seqera/history.db``, since the sidecar always keeps one."""
    flags = {
        "history": getattr(args, "history", None),
        "backend": getattr(args, "backend", None),
        "sizing.shrink_self_sizing": getattr(args, "shrink_self_sizing", False) or None,
    }
    config = load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)
    if not config.get("history"):
        flags["history"] = DEFAULT_HISTORY
        config = load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)
    return config


def _sizing(args: argparse.Namespace, config: Config) -> Callable[[History], Resolver]:
    """The history's resolver ``--resolver`` asks for."""
    if getattr(args, "resolver", "predictive") == "max":
        return lambda history: MaximumResolver(history, margin=args.margin)
    apply_cpus = getattr(args, "apply_cpus", False)
    shrink = bool(config.get("sizing.shrink_self_sizing", False))
    return lambda history: PredictiveResolver(
        history, apply_cpus=apply_cpus, shrink_self_sizing=shrink
    )


def _session(args: argparse.Namespace, **options: Any) -> Session:
    config = _settings(args)
    return Session(config, "seqera-sidecar", sizing=_sizing(args, config), **options)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::", "[::]")


def _token(args: argparse.Namespace) -> str | None:
    """The token from --token-file, $SEQERA_SIDECAR_TOKEN or --token (in that order)."""
    # Read once and removed from this process's environment: no job, local or batch,
    # inherits it from the sidecar.
    from_env = os.environ.pop("SEQERA_SIDECAR_TOKEN", None)
    if args.token_file:
        path = Path(args.token_file)
        try:
            mode = path.stat().st_mode
            text = read_bounded(path, "--token-file", "a file holding a token", limit=2**16)
        except OSError as exc:
            raise UsageError(f"--token-file: {args.token_file!r} cannot be read ({exc})") from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            print(f"seqera-sidecar: warning: --token-file {args.token_file!r} is readable by "
                  "other users; chmod 600 it", file=sys.stderr)  # fmt: skip
        token = text.strip()
        if not token:
            raise UsageError(f"--token-file: {args.token_file!r} is empty; expected a token")
        return token
    if from_env:
        return from_env
    if args.token:
        print("seqera-sidecar: warning: --token is visible to every user in `ps`; use "
              "--token-file or $SEQERA_SIDECAR_TOKEN", file=sys.stderr)  # fmt: skip
        return str(args.token)
    return None


def _hosts(args: argparse.Namespace) -> frozenset[str] | None:
    """The names ``Host`` may carry: loopback, the address served, and --allow-host."""
    from .edge import hosts

    extra = list(args.allow_host or [])
    if _wildcard(args.host) and not extra:
        return None  # every interface: the token guards it, any name reaches it
    return hosts([*extra, *(() if _wildcard(args.host) else [args.host])])


def _serve(args: argparse.Namespace) -> int:
    token = _token(args)
    if not _loopback(args.host) and token is None:
        raise UsageError(
            f"--host: {args.host!r} is reachable from other machines; set a token "
            "(--token-file or $SEQERA_SIDECAR_TOKEN) or listen on 127.0.0.1"
        )
    if args.backend and token is None:
        raise UsageError(
            f"--backend {args.backend}: dispatching runs commands as you for whoever reaches "
            "the port (any local user on a shared machine); set a token with --token-file "
            "or $SEQERA_SIDECAR_TOKEN"
        )
    import uvicorn

    from .app import create_app
    from .runs import RunStore
    from .serving import uvicorn_options

    state = Path(os.path.expanduser(args.state))
    jobs = state.parent / "jobs"
    # Local jobs recorded beside their logs: a restarted sidecar re-adopts them.
    options = {"state": jobs / "records"} if args.backend == "local" else None
    with _session(args, work_dir=jobs, backend_options=options) as session:
        assert session.history is not None  # _config always names one
        dispatcher = None
        if args.backend:
            state.parent.mkdir(parents=True, exist_ok=True)
            dispatcher = RunStore(session, state)
        app = create_app(session.history, token=token, resolvers=session.resolvers,
                         dispatcher=dispatcher, hosts=_hosts(args),
                         body_limit=args.max_body)  # fmt: skip
        if token is None:  # one line, at start: who can write the history on this machine
            print(f"seqera-sidecar: warning: no token: any local user can write this "
                  f"sidecar's history and read its report on {args.host}:{args.port}; set "
                  "one with --token-file or $SEQERA_SIDECAR_TOKEN", file=sys.stderr)  # fmt: skip
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            **uvicorn_options(args.max_connections, args.header_timeout),
        )
        _announcing_server()(config, token is not None).run()
    return 0


def _listening(address: tuple[str, int], token: bool) -> str:
    """The line ``serve`` prints once it accepts connections: where, and what guards it."""
    host, port = address[0], address[1]
    shown = f"[{host}]" if ":" in host else host
    guard = "requests need the bearer token" if token else "no token"
    return f"seqera-sidecar: listening on http://{shown}:{port} ({guard})"


def _announcing_server() -> type:
    import uvicorn

    class Announcing(uvicorn.Server):
        """uvicorn's server, saying where it listens once its sockets are bound (with
        ``--port 0`` only then is the port known; uvicorn's own line is at info level,
        below the default ``--log-level warning``)."""

        def __init__(self, config: uvicorn.Config, token: bool) -> None:
            super().__init__(config)
            self._token = token

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                for server in self.servers:
                    for sock in server.sockets:
                        print(_listening(sock.getsockname(), self._token), file=sys.stderr)

    return Announcing


def _resolve(args: argparse.Namespace) -> int:
    given = {"cpus": args.cpus, "memory": args.memory, "time": args.time}
    request = request_from_directives(
        {k: v for k, v in given.items() if v is not None},
        process=args.process,
        attempt=args.attempt,
    )
    with _session(args) as session:
        resolution = resolve(request, session.resolvers, defaults=DEFAULTS)
    for key, value in directives(resolution.effective).items():
        print(f"{key} {value}")
    print(f"// from {resolution.resolver}" + "".join(f"; {n}" for n in resolution.notes))
    return 0


def _config(args: argparse.Namespace) -> int:
    """The static config, or with ``--per-task`` the closures that ask the sidecar; both
    from the resolvers ``resolve`` and ``serve`` use."""
    with _session(args) as session:
        assert session.history is not None
        if args.per_task:
            from .pertask import declared_values, per_task_config

            settings = _per_task_settings(args, session.config)
            # the processes the history has seen succeed, each by an index
            text = per_task_config(declared_values(session.history), settings)
        else:
            text = process_config(session.history, session.resolvers,
                                  cpus=args.resolver == "max" or args.apply_cpus)  # fmt: skip
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def _per_task_settings(args: argparse.Namespace, config: Config) -> Any:
    from .pertask import Settings

    url = args.url.rstrip("/")
    if not url.startswith(("http://", "https://")) or any(c in url for c in "'\"\n\r\t "):
        raise UsageError(f"--url: {args.url[:80]!r} is not an http:// or https:// URL")
    auto = config.get("auto_labels", "all")
    from seqera_core.labels import METADATA, string_labels

    chosen = METADATA if auto == "all" else () if auto == "none" else tuple(auto)
    return Settings(url=url, timeout_ms=args.timeout_ms, cache_ms=args.cache_ms,
                    backoff_ms=args.backoff_ms, cluster_options=args.cluster_options,
                    labels=string_labels(config.get("labels")),
                    auto_labels=chosen)  # fmt: skip


def _cpus(args: argparse.Namespace) -> int:
    with _session(args) as session:
        assert session.history is not None
        wasted = [use for use in session.history.cpu_use() if use.unused > 0]
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
    from .evaluate_cli import command

    return command(args)


def _margin(text: str) -> float:
    """``--margin``: a finite factor >= 1 (MaximumResolver refuses less with a ValueError)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a factor >= 1, e.g. 1.2")
    return value


def _whole(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (a port, a body limit)."""

    def parse(text: str) -> int:
        digits = text.strip()
        if not (digits.isascii() and digits.isdigit() and len(digits) <= len(str(high))):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number")
        if not low <= int(digits) <= high:
            raise argparse.ArgumentTypeError(f"{digits!r} is not from {low} to {high}")
        return int(digits)

    return parse


# uvicorn's own names (uvicorn.config.LOG_LEVELS); another is a KeyError inside uvicorn.run
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seqera-sidecar", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    from .evaluate_cli import add_arguments

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
        # one right-sizer for serve, resolve and config (static and per task)
        sub.add_argument("--resolver", choices=("predictive", "max"), default="predictive",
                         help="predictive (learns from input sizes, default) or max "
                         "(largest use seen x --margin)")  # fmt: skip
        sub.add_argument("--apply-cpus", action="store_true",
                         help="predictive: cpus = most cores ever busy")  # fmt: skip
        sub.add_argument("--shrink-self-sizing", action="store_true",
                         help="predictive: size tasks that read task.memory below "
                         "what they declare (default: never; "
                         "$SEQERA_SIZING_SHRINK_SELF_SIZING)")  # fmt: skip
        sub.add_argument("--history", help=f"SQLite path, sqlite:/// or postgresql:// URL (default "
                         f"$SEQERA_HISTORY or {DEFAULT_HISTORY})")  # fmt: skip
        sub.add_argument("--margin", type=_margin, default=1.2,
                         help="max: multiplier on the largest use (default 1.2)")  # fmt: skip
        sub.set_defaults(run={"serve": _serve, "resolve": _resolve, "config": _config}[name])
        if name == "serve":
            sub.add_argument("--host", default="127.0.0.1")
            # bind() raises OverflowError outside 0-65535
            sub.add_argument("--port", type=_whole(0, 65535), default=8080)
            sub.add_argument("--token", help="bearer token; visible in ps: prefer --token-file "
                             "or $SEQERA_SIDECAR_TOKEN")  # fmt: skip
            sub.add_argument("--token-file", help="a file holding the bearer token (chmod 600)")
            sub.add_argument("--allow-host", action="append", metavar="NAME",
                             help="a name clients may reach this sidecar by (Host header), "
                             "beyond 127.0.0.1, localhost and ::1; repeat for several")  # fmt: skip
            sub.add_argument("--max-body", type=_whole(1, 2**63 - 1), default=8 * 2**20,
                             metavar="BYTES",
                             help="largest body accepted (default 8 MiB)")  # fmt: skip
            sub.add_argument("--max-connections", type=_whole(1, 100_000), default=1024,
                             help="open connections at most (lowered to what the descriptor "
                             "limit leaves; 503 past it; default 1024)")  # fmt: skip
            sub.add_argument("--header-timeout", type=_whole(1, 3600), default=10,
                             metavar="SECONDS", help="close a connection whose request line "
                             "and headers are not in after this long (default 10)")  # fmt: skip
            sub.add_argument("--log-level", default="warning", type=str.lower, choices=LOG_LEVELS)
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
            sub.add_argument("--per-task", action="store_true",
                             help="closures that ask the sidecar per task (and put "
                             "resourceLabels into clusterOptions on grid executors)")  # fmt: skip
            sub.add_argument("--url", default="http://127.0.0.1:8080",
                             help="--per-task: the sidecar the closures ask (at run time "
                             "$SEQERA_SIDECAR_URL wins)")  # fmt: skip
            sub.add_argument("--timeout-ms", type=_whole(1, 600_000), default=2000,
                             help="--per-task: give up on the sidecar after this long and "
                             "use the declared values (default 2000)")  # fmt: skip
            sub.add_argument("--cache-ms", type=_whole(0, 86_400_000), default=60_000,
                             help="--per-task: reuse an answer for the same question this "
                             "long (default 60000)")  # fmt: skip
            sub.add_argument("--backoff-ms", type=_whole(0, 86_400_000), default=30_000,
                             help="--per-task: after a failure, ask nothing for this long "
                             "(default 30000)")  # fmt: skip
            sub.add_argument("--cluster-options", metavar="TEXT",
                             help="--per-task: your own clusterOptions; the config replaces "
                             "the process's, so they are written first and the labels "
                             "appended")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 2 on invalid input, 1 on other errors."""
    args = _parser().parse_args(argv)
    # A process or path from argv bytes that are not UTF-8 (lone surrogates) prints as
    # \udcff instead of a UnicodeEncodeError on a UTF-8 stdout (as seqera_core.cli does).
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    try:
        code: int = args.run(args)
        return code
    except (UsageError, ResourceError) as exc:  # what the user gave: a flag, a URL, a file
        print(f"seqera-sidecar: {exc}", file=sys.stderr)
        return 2
    except SeqeraError as exc:
        print(f"seqera-sidecar: {exc}", file=sys.stderr)
        return 1
