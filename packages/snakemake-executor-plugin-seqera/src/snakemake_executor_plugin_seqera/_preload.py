"""What a Snakemake job imports, loaded once for all jobs, and the fork server that does it
for the local backend, started as early as Snakemake runs any of this plugin's code.

Snakemake's command line builds the executor's settings (``ExecutorPluginRegistry
().get_plugin(args.executor).get_settings(args)`` in ``snakemake/cli.py``,
``args_to_api``) after it has imported itself and its plugins and before it reads the
Snakefile, builds the DAG or starts a thread; it builds the executor itself only after
all of that (``JobScheduler`` in ``Workflow.execute``). A fork server forked at the
first moment already holds what a job imports, where one started with the executor
would have to import it again (about 2 s of CPU without bytecode caches, in series with
the first jobs). Measured with Snakemake 9.27, ``benchmarks/snakemake_local.py``.
"""

from __future__ import annotations

from seqera_core.backends.local import ForkServer
from seqera_core.backends.registry import BACKENDS, entry

__all__ = ["PRELOAD", "early_fork_server"]

# What a job imports, loaded once per squashed allocation or fork server: its parser, and
# the modules it imports while it reads the Snakefile (smart_open through the source
# cache), measured; and the processor's name, which every job's log header asks for
# (Workflow.info_header -> platform.platform()) and which costs a `uname -p` process
# (15-20 ms) unless platform's cache already holds it.
PRELOAD = (
    "snakemake.cli:get_argument_parser",
    "snakemake.api",
    "snakemake.executors.local",
    "snakemake.storage",
    "smart_open",
    "platform:processor",
)


def early_fork_server(backend: str | None) -> ForkServer | None:
    """A fork server of :data:`PRELOAD`, forked from this process while it runs one thread
    (a new interpreter otherwise), unless ``--seqera-backend`` names a backend that does
    not fork; the session closes it if the configured backend turns out not to."""
    if backend is not None and (backend not in BACKENDS or not entry(backend).forks):
        return None  # route forks too: its local candidate takes the server
    return ForkServer(PRELOAD, fork=True)
