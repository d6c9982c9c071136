"""Every config key: its ``SEQERA_*`` environment variable and what its value may be.

``local.cpus`` and ``local.memory`` (``SEQERA_LOCAL_CPUS``, ``SEQERA_LOCAL_MEMORY``: cores,
and bytes or a size such as ``8GiB``) are what the local backend shares between jobs
(default: the whole machine).

``sge.memory``, ``sge.pe`` and ``sge.gpu`` (``SEQERA_SGE_<KEY>``) name a Grid Engine site's
memory resource (``h_vmem`` by default; ``h_rss``, ``mem_free``, ``m_mem_free``), parallel
environment (``smp``) and GPU resource (``gpu``); a platform's ``settings`` may hold them too.

``lsf.unit``, ``lsf.job_memlimit`` and ``lsf.reserve_per_task`` (``SEQERA_LSF_<KEY>``) override
what ``$LSF_ENVDIR/lsf.conf`` says about an LSF site: ``LSF_UNIT_FOR_LIMITS`` (KB by default),
whether ``-M`` is per job (``LSB_JOB_MEMLIMIT``) and whether ``rusage[mem=]`` counts per task.

``sizing.shrink_self_sizing`` (``SEQERA_SIZING_SHRINK_SELF_SIZING``, boolean, default
false) lets the right-sizer size a tool that sizes itself from its allocation below what
it declares (:mod:`seqera_core.sizing._guard`): the user's opt-out of that guard.

``route.*`` keys configure the routing backend (``backend: route``, ``SEQERA_ROUTE_<KEY>``):
``backends`` (the candidates, default ``local, slurm``), ``objective`` (``finish``,
``cost`` or ``cost-per-hour-saved``), ``max_cost_per_hour_saved`` (the ceiling of the last:
a number >= 0, the most extra cost per hour of finish time saved), ``pin``
(``RULE=BACKEND`` items, or a mapping: a user's choice that always wins), ``staged``
(boolean: no job needs the submit host's files, so a backend without the shared file
system may run any; otherwise only jobs the engine stages go there), ``overhead``
(``BACKEND=SECONDS``) and ``runtime`` (seconds a job is expected to run when nothing
says). Each candidate keeps its own section.
A platform definition's ``route:`` section holds the same keys; these override it.

``ecs.*`` keys configure the AWS ECS backend (``SEQERA_ECS_<KEY>`` in the environment):
``cluster`` and ``execution_role`` are required to run there; ``task_role``, ``subnets``
and ``security_groups`` (lists, or comma-separated text), ``assign_public_ip`` (boolean),
``logs_group``, ``capacity_provider``, ``max_spot_attempts`` (integer >= 1), ``region`` and
``report_usage`` (boolean) are optional.

``batch.*`` keys configure the AWS Batch backend (``SEQERA_BATCH_<KEY>``): ``queue`` (the
job queue, required), ``job_role``, ``execution_role`` (required on Fargate), ``platform``
(``EC2`` or ``FARGATE``), ``assign_public_ip`` and ``report_usage`` (booleans),
``logs_group``, ``max_spot_attempts`` (1 to 10) and ``region``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dialects.human import parse_duration
from ..errors import ResourceError
from ..labels import METADATA, string_labels
from ..redaction import redacted
from ..squash import SquashMode
from ._values import (
    boolean,
    byte_size,
    core_count,
    cost_amount,
    name_list,
    nonempty_text,
    timeout_seconds,
    whole_count,
)

__all__ = ["KEYS", "check", "checked_value", "key_value"]

# key -> environment variable
KEYS: dict[str, str] = {
    "backend": "SEQERA_BACKEND",
    "platform": "SEQERA_PLATFORM",
    "resolver.url": "SEQERA_RESOLVER_URL",
    "resolver.token": "SEQERA_RESOLVER_TOKEN",
    "resolver.timeout": "SEQERA_RESOLVER_TIMEOUT",
    "auto_labels": "SEQERA_AUTO_LABELS",
    "labels": "SEQERA_LABELS",
    "history": "SEQERA_HISTORY",
    "local.cpus": "SEQERA_LOCAL_CPUS",
    "local.memory": "SEQERA_LOCAL_MEMORY",
    "sge.memory": "SEQERA_SGE_MEMORY",
    "sge.pe": "SEQERA_SGE_PE",
    "sge.gpu": "SEQERA_SGE_GPU",
    "lsf.unit": "SEQERA_LSF_UNIT",
    "lsf.job_memlimit": "SEQERA_LSF_JOB_MEMLIMIT",
    "lsf.reserve_per_task": "SEQERA_LSF_RESERVE_PER_TASK",
    "ecs.cluster": "SEQERA_ECS_CLUSTER",
    "ecs.execution_role": "SEQERA_ECS_EXECUTION_ROLE",
    "ecs.task_role": "SEQERA_ECS_TASK_ROLE",
    "ecs.subnets": "SEQERA_ECS_SUBNETS",
    "ecs.security_groups": "SEQERA_ECS_SECURITY_GROUPS",
    "ecs.assign_public_ip": "SEQERA_ECS_ASSIGN_PUBLIC_IP",
    "ecs.logs_group": "SEQERA_ECS_LOGS_GROUP",
    "ecs.capacity_provider": "SEQERA_ECS_CAPACITY_PROVIDER",
    "ecs.max_spot_attempts": "SEQERA_ECS_MAX_SPOT_ATTEMPTS",
    "ecs.region": "SEQERA_ECS_REGION",
    "ecs.report_usage": "SEQERA_ECS_REPORT_USAGE",
    "batch.queue": "SEQERA_BATCH_QUEUE",
    "batch.job_role": "SEQERA_BATCH_JOB_ROLE",
    "batch.execution_role": "SEQERA_BATCH_EXECUTION_ROLE",
    "batch.platform": "SEQERA_BATCH_PLATFORM",
    "batch.assign_public_ip": "SEQERA_BATCH_ASSIGN_PUBLIC_IP",
    "batch.logs_group": "SEQERA_BATCH_LOGS_GROUP",
    "batch.max_spot_attempts": "SEQERA_BATCH_MAX_SPOT_ATTEMPTS",
    "batch.region": "SEQERA_BATCH_REGION",
    "batch.report_usage": "SEQERA_BATCH_REPORT_USAGE",
    "squash.mode": "SEQERA_SQUASH_MODE",
    "squash.max_jobs": "SEQERA_SQUASH_MAX_JOBS",
    "squash.max_time": "SEQERA_SQUASH_MAX_TIME",
    "squash.cpus": "SEQERA_SQUASH_CPUS",
    "squash.key": "SEQERA_SQUASH_KEY",
    "sizing.shrink_self_sizing": "SEQERA_SIZING_SHRINK_SELF_SIZING",
    # the Slurm backend's site settings (backends/batch/_slurm_site.py)
    "slurm.tmp": "SEQERA_SLURM_TMP",
    "slurm.qos": "SEQERA_SLURM_QOS",
    "slurm.reservation": "SEQERA_SLURM_RESERVATION",
    "slurm.clusters": "SEQERA_SLURM_CLUSTERS",
    "slurm.requeue": "SEQERA_SLURM_REQUEUE",
    "slurm.signal": "SEQERA_SLURM_SIGNAL",
    "slurm.jobname_prefix": "SEQERA_SLURM_JOBNAME_PREFIX",
    "slurm.no_account": "SEQERA_SLURM_NO_ACCOUNT",
    # the routing backend's (backends/route)
    "route.backends": "SEQERA_ROUTE_BACKENDS",
    "route.objective": "SEQERA_ROUTE_OBJECTIVE",
    "route.pin": "SEQERA_ROUTE_PIN",
    "route.staged": "SEQERA_ROUTE_STAGED",
    "route.overhead": "SEQERA_ROUTE_OVERHEAD",
    "route.runtime": "SEQERA_ROUTE_RUNTIME",
    "route.max_cost_per_hour_saved": "SEQERA_ROUTE_MAX_COST_PER_HOUR_SAVED",
}
_LISTS = ("ecs.subnets", "ecs.security_groups", "route.backends", "route.pin", "route.overhead")
_MODES = tuple(m.value for m in SquashMode)
# the routing objectives (backends/route/_policy.OBJECTIVES; a test keeps them equal), not
# imported: that would import every backend with the config
_OBJECTIVES = ("finish", "cost", "cost-per-hour-saved")
_AUTO_FORMS = f"all, none, or a list of {', '.join(METADATA)}"


def _auto_labels(value: Any, where: str) -> str | list[str]:
    if isinstance(value, str) and value.strip() in ("all", "none"):
        return value.strip()
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ResourceError(f"{where}: auto_labels", value, _AUTO_FORMS)
    cleaned = [n.strip() for n in names if n.strip()]
    if not set(cleaned) <= set(METADATA):
        raise ResourceError(f"{where}: auto_labels", value, _AUTO_FORMS)
    return cleaned


def key_value(field: str, text: str) -> tuple[str, str]:
    """``KEY=VALUE`` split at the first ``=`` (the one parser of every ``KEY=VALUE`` flag and
    variable); a missing ``=`` or key is a ResourceError naming ``field``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ResourceError(field, text, "KEY=VALUE, e.g. project=rnaseq")
    return key.strip(), value


def _labels(value: Any, where: str) -> dict[str, str]:
    if isinstance(value, str):  # SEQERA_LABELS=team=genomics,project=x
        items = [item for item in value.split(",") if item.strip()]
        try:
            return dict(key_value(f"{where}: labels", item) for item in items)
        except ResourceError:
            raise ResourceError(f"{where}: labels", value, "KEY=VALUE[,KEY=VALUE...]") from None
    if not isinstance(value, Mapping) or any(
        isinstance(v, Mapping | list) or k in (None, "") for k, v in value.items()
    ):
        raise ResourceError(f"{where}: labels", value, "a mapping of label names to single values")
    return string_labels(value)


def _backends() -> tuple[str, ...]:
    # the registry (entry points, every backend's module) only when a backend is named:
    # a command that runs nothing (a report, a validation) reads its config without it
    from ..backends.registry import BACKENDS

    return BACKENDS


def check(key: str, value: Any, where: str) -> Any:
    if key not in KEYS:
        raise ResourceError(f"{where}: {key}", value, f"one of the keys {', '.join(KEYS)}")
    if key == "backend" and value not in (names := _backends()):
        raise ResourceError(f"{where}: backend", value, f"one of {', '.join(names)}")
    if key == "resolver.timeout":
        return timeout_seconds(value, where)
    if key == "auto_labels":
        return _auto_labels(value, where)
    if key == "labels":
        return _labels(value, where)
    if key in ("route.pin", "route.overhead") and isinstance(value, Mapping):
        value = [f"{k}={v}" for k, v in value.items()]  # route: {pin: {align: slurm}}
    if key in _LISTS:
        return _route_list(key, name_list(key, value, where), where)
    if key in ("ecs.assign_public_ip", "ecs.report_usage", "sizing.shrink_self_sizing",
               "slurm.requeue", "slurm.no_account", "batch.assign_public_ip",
               "batch.report_usage", "route.staged"):  # fmt: skip
        return boolean(key, value, where)
    if key == "local.cpus":
        return core_count(key, value, where)
    if key == "local.memory":
        return byte_size(key, value, where)
    if key in ("ecs.max_spot_attempts", "squash.max_jobs", "squash.cpus",
               "batch.max_spot_attempts"):  # fmt: skip
        return whole_count(key, value, where)
    if key == "slurm.tmp" and str(value).strip().lower() not in ("auto", "always", "never"):
        raise ResourceError(f"{where}: {key}", value, "one of auto, always, never")
    if key == "route.objective" and str(value).strip() not in _OBJECTIVES:
        raise ResourceError(f"{where}: {key}", value, f"one of {', '.join(_OBJECTIVES)}")
    if key == "route.max_cost_per_hour_saved":
        return cost_amount(key, value, where)
    if key == "route.runtime":
        return timeout_seconds(value, where, key)
    if key == "squash.mode" and str(value).strip().lower() not in _MODES:
        raise ResourceError(f"{where}: {key}", value, f"one of {', '.join(_MODES)}")
    text = nonempty_text(key, value, where)
    if key == "resolver.url" and not text.strip().startswith(("http://", "https://")):
        # said here, naming the layer; the password of a URL is never shown
        raise ResourceError(f"{where}: {key}", redacted(text), "an http:// or https:// URL")
    if key == "squash.max_time":  # checked here, where the value was written; kept as text
        parse_duration(text, f"{where}: {key}")
    return text


def checked_value(key: str, value: Any) -> Any:
    """``value`` of config key ``key`` as a layer holds it (a platform definition's
    ``route:`` section is read with it).

    Raises:
        ResourceError: naming ``key``, the value and what was expected.
    """
    try:
        return check(key, value, "")
    except ResourceError as exc:
        raise ResourceError(key, exc.value, exc.expected) from None


def _route_list(key: str, items: list[str], where: str) -> list[str]:
    # route.backends: registry names; route.pin: RULE=BACKEND; route.overhead: BACKEND=SECONDS
    for item in items:
        if key == "route.backends":
            if item == "route" or item not in _backends():
                others = ", ".join(b for b in _backends() if b != "route")
                raise ResourceError(f"{where}: {key}", item, f"one of {others}")
            continue
        if key.startswith("route."):
            name, sep, value = item.partition("=")
            if not sep or not name.strip() or not value.strip():
                wanted = "RULE=BACKEND" if key == "route.pin" else "BACKEND=SECONDS"
                raise ResourceError(f"{where}: {key}", item, wanted)
            if key == "route.overhead":
                try:
                    timeout_seconds(value, where, key)
                except ResourceError:  # the pair as written, as every KEY=VALUE list says it
                    raise ResourceError(
                        f"{where}: {key}", item, "BACKEND=SECONDS, seconds a number > 0"
                    ) from None
    return items
