"""What a large task history costs a run, the report of one run and a resolve (issue 31).

``uv run --with 'snakemake>=9,<10' python benchmarks/history_scale.py [--sqlite-rows
10000000] [--postgres-rows 1000000] [--traces DIR] [--work /tmp/seqera-history-scale]``

Builds a history by replaying the nf-core traces of ``--traces`` (``trace_*.csv``; the
project's are in ``../shared/data/traces``) under as many run ids as the row count takes
(one run id per trace and replay): one replay written from Python, the others copied
from it by SQL in transactions of ~600,000 rows, as a version-1 table (attempts only),
so the first open also measures the one-time upgrade that folds every attempt into the
summaries. The SQLite files stay under ``--work`` and are reused (delete them to build
again); the PostgreSQL one lives in a throw-away server (``tests/postgres.py``).

Then, each next to the same with an empty history (the report: next to a history of that
run alone), medians of ``--repeat`` fresh processes and their peak resident memory
(``wait4``): ``seqera run -- true``; the README's Snakemake example (``snakemake
--executor seqera --seqera-history``, 5 jobs on the local backend, a fresh directory
each time); ``seqera report --run ID --json``; ``seqera-sidecar resolve`` (a cold
process); and a running ``seqera-sidecar serve``: ``--requests`` sequential resolves
over the traces' processes after one warm-up pass, p50/p99 seen by the client, and the
server's peak memory; and the same resolves in this process (next to a history of one
run: the same work per request), where the sidecar's own scheduling noise is not in them.
Prints a table; appends JSON lines to ``--results``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _emit import Emitter, add_argument  # noqa: E402

from seqera_core.history import (  # noqa: E402
    TaskRecord,
    _sql,  # the version-1 table's own statements
    open_history,
)
from seqera_sidecar.trace import read_trace  # noqa: E402

__all__ = ["main"]

SNAKEFILE = ROOT / "examples" / "snakemake" / "Snakefile"
_BIN = Path(sys.executable).parent
_T0 = 1.7e9  # the first replay's finish times start here; each later one an hour on


def _base(traces: Path) -> list[tuple[str, TaskRecord]]:
    found = sorted(traces.glob("trace_*.csv"))
    if not found:
        sys.exit(f"no trace_*.csv in {traces} (--traces)")
    return [(t.stem.removeprefix("trace_"), r) for t in found for r in read_trace(t, "x")]


def _rows(base: list[tuple[str, TaskRecord]]) -> list[list[Any]]:
    rows = []
    for j, (name, record) in enumerate(base):
        row = list(_sql.row(record))
        row[0] = f"replay-00000-{name}"
        row[_sql.FIELDS.index("finished")] = _T0 + j * 0.5
        rows.append(row)
    return rows


def _copies(replays: int, param: str) -> Iterator[tuple[str, tuple[int, float]]]:
    """The statement (and its parameters) that copies replay 0 as replay ``i``."""
    fmt = "printf('%05d', {p})" if param == "?" else "lpad(({p})::text, 5, '0')"
    # the run id renamed and the finish time an hour on per replay, every other column kept
    picked = {"run_id": f"'replay-' || {fmt.format(p=param)} || substr(run_id, 13)",
              "finished": f"finished + {param}"}  # fmt: skip
    select = ", ".join(picked.get(field, field) for field in _sql.FIELDS)
    for i in range(1, replays):
        yield (
            f"INSERT INTO task_history ({_sql.COLUMNS}) SELECT {select} FROM base ORDER BY base.n",
            (i, i * 3600.0),
        )


def build_sqlite(path: Path, rows: int, base: list[tuple[str, TaskRecord]]) -> None:
    """A version-1 SQLite history of about ``rows`` attempts."""
    replays = max(1, round(rows / len(base)))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")  # a benchmark's file: rebuilt if the machine fails
    db.executescript(_sql.schema("sqlite"))
    marks = ", ".join("?" for _ in _sql.FIELDS)
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO task_history ({_sql.COLUMNS}) VALUES ({marks})", _rows(base))
    db.execute("COMMIT")
    # copies read a small table of their own, not the one growing
    db.execute("CREATE TEMP TABLE base AS SELECT rowid AS n, * FROM task_history")
    db.execute("BEGIN")
    for i, (statement, params) in enumerate(_copies(replays, "?"), start=1):
        db.execute(statement, params)
        if i % 100 == 0:
            db.execute("COMMIT")
            db.execute("BEGIN")
    db.execute("COMMIT")
    db.close()


def build_postgres(url: str, rows: int, base: list[tuple[str, TaskRecord]]) -> None:
    """A version-1 PostgreSQL history of about ``rows`` attempts."""
    import psycopg

    replays = max(1, round(rows / len(base)))
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(_sql.schema("postgresql"))
        marks = ", ".join("%s" for _ in _sql.FIELDS)
        with pg.transaction(), pg.cursor() as cursor:
            cursor.executemany(f"INSERT INTO task_history ({_sql.COLUMNS}) VALUES ({marks})",
                               _rows(base))  # fmt: skip
        pg.execute(f"CREATE TEMP TABLE base AS SELECT seq AS n, {_sql.COLUMNS} FROM task_history")
        for start in range(0, replays - 1, 100):
            with pg.transaction():
                for statement, params in list(_copies(replays, "%s"))[start : start + 100]:
                    pg.execute(statement, params)


def _timed(argv: Sequence[str], cwd: Path | None = None) -> tuple[float, int]:
    """Wall seconds and peak resident MiB of one command (it must succeed).

    The peak is GNU time's (``%M``, its child's own ``wait4``): the benchmark's own
    ``wait4`` would report the size of this process, which forked it, past the exec."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        started = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, *argv],
            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
        )  # fmt: skip
        wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed:\n{done.stderr.decode()[-3000:]}")
        return wall, int(rss.read().split()[-1]) // 1024


def _paired(small_of: Any, large_of: Any, repeat: int) -> tuple[tuple[float, int], ...]:
    """Medians of wall seconds and largest peaks, the two commands run in turn (a shared
    machine's load changes while they run: each pair sees about the same)."""
    runs: tuple[list[tuple[float, int]], list[tuple[float, int]]] = ([], [])
    for i in range(repeat):
        runs[0].append(_timed(*small_of(i)))
        runs[1].append(_timed(*large_of(i)))
    return tuple((statistics.median(w for w, _ in r), max(m for _, m in r)) for r in runs)


def _serve(history: str, processes: list[str], requests: int) -> tuple[float, float, int]:
    """p50 and p99 ms of sequential resolves on a warm sidecar, and its peak MiB."""
    from tests.seqera_sidecar.conftest import start_sidecar, stop_sidecar

    process, served = start_sidecar(None, None, "--history", history)
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            body = [{"process": p, "memory_bytes": 4 * 2**30, "cpus": 2} for p in processes]
            for item in body:  # warm: each process's first request loads it
                client.post("/v1/resources/resolve", json=item).raise_for_status()
            took = []
            for i in range(requests):
                started = time.perf_counter()
                client.post("/v1/resources/resolve", json=body[i % len(body)]).raise_for_status()
                took.append((time.perf_counter() - started) * 1000)
        status = Path(f"/proc/{process.pid}/status").read_text()
        peak = next(int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("VmHWM"))  # fmt: skip
    finally:
        stop_sidecar(process)
    took.sort()
    return took[len(took) // 2], took[int(len(took) * 0.99)], peak // 1024


@contextlib.contextmanager
def _postgres() -> Iterator[str]:
    from tests.postgres import postgres_server

    with postgres_server() as server:
        yield server.url


def _database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(f"DROP DATABASE IF EXISTS {name}")
        pg.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + f"/{name}"


def _measure(
    label: str, big: str, empty: Any, one: str, rows: int, args: argparse.Namespace,
    processes: list[str], emit: Emitter, work: Path,
) -> list[str]:  # fmt: skip
    """The table rows of one store: ``empty(i)`` gives a fresh empty history's location."""
    lines = []
    run_id = "replay-00000-chipseq"  # in the large history and in the one of that run alone
    cases: list[tuple[str, Any]] = [
        ("seqera run -- true",
         lambda h: lambda i: ([str(_BIN / "seqera"), "run", "--backend", "local",
                               "--history", h, "--", "true"],)),
        ("Snakemake example (5 jobs)",
         lambda h: lambda i: ([sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-q",
                               "--executor", "seqera", "--jobs", "4", "--seqera-history", h,
                               "-d", tempfile.mkdtemp(dir=work)],)),
        ("seqera-sidecar resolve (cold)",
         lambda h: lambda i: ([str(_BIN / "seqera-sidecar"), "resolve", "--history", h,
                               "--process", processes[i % len(processes)], "--memory", "4 GB"],)),
    ]  # fmt: skip
    for (name, argv), case in zip(cases, ("run", "snakemake", "resolve"), strict=True):
        if case in args.skip_case:
            continue
        (small_wall, small_mem), (wall, mem) = _paired(
            lambda i, a=argv: a(empty(i))(i), argv(big), args.repeat
        )
        lines.append(f"| {label} | {name} | {small_wall:.2f} s, {small_mem} MiB | "
                     f"{wall:.2f} s, {mem} MiB | {wall / small_wall:.2f} |")  # fmt: skip
        for size, w, m in ((0, small_wall, small_mem), (rows, wall, mem)):
            emit.figure(name, round(w, 3), "s", store=label, rows=size)
            emit.figure(f"{name} peak RSS", m, "MiB", store=label, rows=size)
    report = lambda h: lambda i: ([str(_BIN / "seqera"), "report", "--history", h,  # noqa: E731
                                   "--run", run_id, "--json", "-o", os.devnull],)  # fmt: skip
    if "report" in args.skip_case:
        return lines
    (small_wall, small_mem), (wall, mem) = _paired(report(one), report(big), args.repeat)
    lines.append(f"| {label} | seqera report --run ID --json (vs that run alone) | "
                 f"{small_wall:.2f} s, {small_mem} MiB | {wall:.2f} s, {mem} MiB | "
                 f"{wall / small_wall:.2f} |")  # fmt: skip
    emit.figure("report of one run", round(wall, 3), "s", store=label, rows=rows)
    emit.figure("report of one run", round(small_wall, 3), "s", store=label, rows=0)
    if "serve" in args.skip_case:
        return lines
    p50e, p99e, meme = _serve(empty(99), processes, args.requests)
    p50, p99, mem = _serve(big, processes, args.requests)
    lines.append(f"| {label} | sidecar HTTP resolve, warm: p50 / p99 | {p50e:.1f} / "
                 f"{p99e:.1f} ms, {meme} MiB | {p50:.1f} / {p99:.1f} ms, {mem} MiB | "
                 f"{p99 / p99e:.2f} (p99) |")  # fmt: skip
    for size, a, b, m in ((0, p50e, p99e, meme), (rows, p50, p99, mem)):
        emit.figure("sidecar resolve p50", round(a, 2), "ms", store=label, rows=size)
        emit.figure("sidecar resolve p99", round(b, 2), "ms", store=label, rows=size)
        emit.figure("sidecar peak RSS", m, "MiB", store=label, rows=size)
    if "inprocess" in args.skip_case:
        return lines
    (p50o, p99o), (p50, p99) = _in_process((one, big), processes, args.requests)
    lines.append(f"| {label} | resolve in process, warm: p50 / p99 (vs that run alone) | "
                 f"{p50o:.2f} / {p99o:.2f} ms | {p50:.2f} / {p99:.2f} ms | "
                 f"{p99 / p99o:.2f} (p99) |")  # fmt: skip
    for size, a, b in ((0, p50o, p99o), (rows, p50, p99)):
        emit.figure("in-process resolve p50", round(a, 3), "ms", store=label, rows=size)
        emit.figure("in-process resolve p99", round(b, 3), "ms", store=label, rows=size)
    return lines


def _in_process(
    histories: tuple[str, str], processes: list[str], requests: int
) -> list[tuple[float, float]]:
    """p50 and p99 ms of warm resolves in this process (no HTTP, no other process's
    scheduling in them), over each history in turn, in 5 interleaved blocks: what the
    history's size costs a resolve, apart from the sidecar's own noise. Against a history
    of the same processes (that run alone), so both do the same work per request."""
    from seqera_core.models import ResourceRequest
    from seqera_core.resolvers import PredictiveResolver

    stores = [open_history(h) for h in histories]
    try:
        body = [ResourceRequest(process=p, memory=4 * 2**30, cpus=2) for p in processes]
        resolvers = [PredictiveResolver(store) for store in stores]
        for resolver in resolvers:
            for request in body:  # warm: each process's first request loads it
                resolver.resolve(request)
        took: list[list[float]] = [[], []]
        for _ in range(5):
            for resolver, times in zip(resolvers, took, strict=True):
                for i in range(requests):
                    started = time.perf_counter()
                    resolver.resolve(body[i % len(body)])
                    times.append((time.perf_counter() - started) * 1000)
    finally:
        for store in stores:
            store.close()
    for times in took:
        times.sort()
    return [(t[len(t) // 2], t[int(len(t) * 0.99)]) for t in took]


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _upgrade(location: str) -> str:
    """The first open's wall and CPU seconds (this process's: a PostgreSQL server's own
    aggregation is not in them)."""
    started, cpu = time.perf_counter(), _cpu()
    open_history(location).close()  # the first open builds the summaries
    return f"{time.perf_counter() - started:.1f} s, {_cpu() - cpu:.1f} s CPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite-rows", type=int, default=10_000_000)
    parser.add_argument("--postgres-rows", type=int, default=1_000_000)
    parser.add_argument("--traces", type=Path, default=ROOT.parent / "shared/data/traces")
    parser.add_argument("--work", type=Path, default=Path("/tmp/seqera-history-scale"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--skip", choices=("sqlite", "postgresql"), action="append", default=[])
    cases = ("run", "snakemake", "resolve", "report", "serve", "inprocess")
    parser.add_argument("--skip-case", action="append", default=[], choices=cases)
    add_argument(parser)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    base = _base(args.traces)
    processes = sorted({r.process for _, r in base})[::4]
    emit = Emitter("history_scale", args.results)
    table = ["| store | what | empty history | large history | ratio |", "|---|---|---|---|---|"]
    notes = []
    if "sqlite" not in args.skip:
        big, one = args.work / f"history-{args.sqlite_rows}.db", args.work / "history-one.db"
        for path, rows in ((big, args.sqlite_rows), (one, len(base))):
            if not path.exists():
                started = time.perf_counter()
                build_sqlite(path, rows, base)
                notes.append(f"built {path} in {time.perf_counter() - started:.0f} s")
                notes.append(f"first open (upgrade) {_upgrade(str(path))}")
        rows = open_history(str(big)).count()
        empty = lambda i: str(Path(tempfile.mkdtemp(dir=args.work)) / "empty.db")  # noqa: E731
        table += _measure(f"SQLite, {rows:,} rows", str(big), empty, str(one), rows, args,
                          processes, emit, args.work)  # fmt: skip
    if "postgresql" not in args.skip:
        with _postgres() as url:
            big_url, one_url = _database(url, "big"), _database(url, "one")
            for location, rows in ((big_url, args.postgres_rows), (one_url, len(base))):
                started = time.perf_counter()
                build_postgres(location, rows, base)
                notes.append(f"built {rows:,} PostgreSQL rows in "
                             f"{time.perf_counter() - started:.0f} s")  # fmt: skip
                notes.append(f"first open (upgrade) {_upgrade(location)}")
            rows = open_history(big_url).count()
            empty = lambda i: _database(url, f"empty{i}")  # noqa: E731
            table += _measure(f"PostgreSQL, {rows:,} rows", big_url, empty, one_url, rows,
                              args, processes, emit, args.work)  # fmt: skip
    emit.close()
    print("\n".join([*notes, "", *table]))
    for leftover in args.work.glob("tmp*"):
        shutil.rmtree(leftover, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
