"""What a Slurm site adds to every job: the run's settings (``slurm.*``), ``--tmp`` only
where it can be met, the account, and the notes a user should read once.

The settings are snakemake-executor-plugin-slurm's (``docs/further.md``): ``--qos``,
``--reservation``, ``--requeue``, ``--clusters``, a job-name prefix; plus ``--signal``
before the time limit (Nextflow's ``clusterOptions`` idiom ``--signal=B:USR2@30``) so a
job can save its state. A rule's own value (``qos``, ``clusters``) wins over the run's.

``--tmp`` asks for that much ``TmpDisk`` on a node (``man slurm.conf``: "TmpDisk ...
default value is 0"): on a site whose nodes declare none, every job that carries one is
refused with "Temporary disk specification can not be satisfied", which is what
Snakemake's default ``disk_mb`` would cause. The Slurm plugin never sends it. With
``tmp: auto`` it is sent only where one ``sinfo`` of the partition (once per run) shows
a node declaring that much; ``always`` sends it, ``never`` drops it.

The account, when none is given, is the user's default association's (``sacctmgr show
user``), as the Slurm plugin's ``accounts.py`` guesses it first; one given is checked
against ``sacctmgr``'s list once. Where accounting is off ``sacctmgr`` fails, and nothing
is added or refused.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable, Sequence

from ...dialects.slurm import parse_memory
from ...errors import ResourceError, UsageError
from ._commands import CommandResult

__all__ = ["SlurmSite", "parse_tmp_disk"]

_TMP_MODES = ("auto", "always", "never")
_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,50}")
# Seconds a finished job stays in squeue below which a status from squeue alone is a race
# (the Slurm plugin's job_status_query.should_recommend_squeue_status_command).
SHORT_MIN_JOB_AGE = 43


def parse_tmp_disk(text: str, partition: str | None) -> int | None:
    """The largest ``TmpDisk`` in bytes of ``partition``'s nodes (None: the default one)
    from ``sinfo -h -N -o '%P|%d'`` (``%d``: MB, which Slurm means as MiB)."""
    largest: int | None = None
    for line in text.splitlines():
        name, _, size = (f.strip() for f in line.partition("|"))
        if (partition is None and not name.endswith("*")) or (
            partition and name.rstrip("*") != partition
        ):
            continue
        if size.isdigit():
            largest = max(largest or 0, int(size) << 20)
    return largest


class SlurmSite:
    """The run's Slurm settings and what it learnt of the site (one ``sinfo`` per partition).

    Args:
        run: runs one scheduler command (the backend's, with its timeout and env).
        warn: where one-line notes go.
    """

    def __init__(
        self,
        run: Callable[[Sequence[str]], CommandResult],
        warn: Callable[[str], None],
        *,
        tmp: str = "auto",
        qos: str | None = None,
        reservation: str | None = None,
        clusters: str | None = None,
        requeue: bool = False,
        signal: str | None = None,
        jobname_prefix: str | None = None,
        no_account: bool = False,
    ) -> None:
        if tmp not in _TMP_MODES:
            raise ResourceError("slurm.tmp", tmp, f"one of {', '.join(_TMP_MODES)}")
        if jobname_prefix and not _PREFIX.fullmatch(jobname_prefix):
            raise ResourceError(
                "slurm.jobname_prefix",
                jobname_prefix,
                "letters, digits, '_' or '-', at most 50 (as the Slurm plugin takes it)",
            )
        self._run = run
        self.warn = warn
        self.tmp = tmp
        self.qos = qos
        self.reservation = reservation
        self.clusters = clusters
        self.requeue = requeue
        self.signal = signal
        self.prefix = jobname_prefix or ""
        self.no_account = no_account
        self._tmp_disk: dict[str | None, int | None] = {}
        self._accounts: tuple[str, ...] | None = None
        self._default_account: str | None = None
        self._asked_default = False
        self._said: set[str] = set()

    def note(self, text: str) -> None:
        """Say ``text`` once per run."""
        if text not in self._said:
            self._said.add(text)
            self.warn(text)

    def job_name(self, name: str) -> str:
        return f"{self.prefix}_{name}" if self.prefix else name

    def args(self, native: Sequence[str], partition: str | None, account: bool) -> list[str]:
        """The request's sbatch options (``native``) with ``--tmp`` decided and the run's
        settings added where the request has none of its own."""
        args = [a for a in native if not self._drop_tmp(a, partition)]
        given = {a.partition("=")[0] for a in args}
        run = (("--qos", self.qos), ("--reservation", self.reservation),
               ("--clusters", self.clusters), ("--signal", self.signal))  # fmt: skip
        for option, value in run:
            if value and option not in given:
                args.append(f"{option}={value}")
        if self.requeue and "--requeue" not in given:
            args.append("--requeue")
        if account and "--account" not in given and not self.no_account:
            found = self.default_account()
            if found:
                args.append(f"--account={found}")
        return args

    def _drop_tmp(self, arg: str, partition: str | None) -> bool:
        if not arg.startswith("--tmp="):
            return False
        if self.tmp == "always":
            return False
        size = parse_memory(arg.removeprefix("--tmp="), "--tmp")
        if self.tmp == "auto":
            declared = self.tmp_disk(partition)
            if declared is not None and declared >= size:
                return False
            where = f"partition {partition}" if partition else "the default partition"
            self.note(
                f"disk not requested (--tmp): no node of {where} declares {size >> 20} MiB "
                "of TmpDisk; set slurm.tmp: always to send it anyway"
            )
        return True

    def tmp_disk(self, partition: str | None) -> int | None:
        """The largest TmpDisk of ``partition``'s nodes, from one ``sinfo`` per run."""
        if partition not in self._tmp_disk:
            argv = ["sinfo", "-h", "-N", "-o", "%P|%d"]
            result = self._run([*argv, "-p", partition] if partition else argv)
            self._tmp_disk[partition] = (
                parse_tmp_disk(result.stdout, partition) if result.ok else None
            )
        return self._tmp_disk[partition]

    def check_account(self, account: str) -> None:
        """Refuse an account ``sacctmgr`` does not list for this user (where it answers)."""
        if self.no_account:
            return
        if self._accounts is None:
            user = getpass.getuser()
            argv = ["sacctmgr", "-n", "-P", "-s", "list", "user", user, "format=account"]
            result = self._run(argv)
            lines = [x.strip() for x in result.stdout.splitlines() if x.strip()]
            self._accounts = tuple(lines) if result.ok else ()
        if self._accounts and account not in self._accounts:
            raise UsageError(
                f"slurm_account {account!r} is not one of this user's Slurm accounts "
                f"({', '.join(self._accounts)}), as sacctmgr lists them"
            )

    def default_account(self) -> str | None:
        """The user's default account (``sacctmgr show user``), asked once."""
        if self._asked_default:
            return self._default_account
        self._asked_default = True
        argv = ["sacctmgr", "-n", "-P", "show", "user", getpass.getuser(), "format=defaultaccount"]
        result = self._run(argv)
        names = [x.strip() for x in result.stdout.splitlines() if x.strip()]
        if result.ok and names and names[-1] not in ("(null)", "none"):
            self._default_account = names[-1]
            self.note(f"account {names[-1]} chosen (sacctmgr); set slurm_account to choose")
        return self._default_account

    def min_job_age(self, history: str | None) -> None:
        """Warn once when finished jobs leave squeue sooner than a poll may come and no
        history (sacct, jobcomp) can tell what became of them."""
        if history != "none":
            return
        result = self._run(["scontrol", "show", "config"])
        found = re.search(r"^MinJobAge\s*=\s*(\d+)", result.stdout, re.MULTILINE)
        if found and int(found[1]) < SHORT_MIN_JOB_AGE:
            self.note(
                f"MinJobAge is {found[1]} s and neither sacct nor jobcomp answers: a job "
                "that ends between two polls may only be known by its exit file"
            )
