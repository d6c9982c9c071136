"""Layered configuration: user file, project file, environment, command line.

Each layer overrides the one before, and every value remembers where it came from:

1. ``$XDG_CONFIG_HOME/seqera/config.yaml`` (``~/.config/seqera/config.yaml`` when the
   variable is unset or empty, as the XDG Base Directory specification says);
2. ``seqera.yaml`` in the working directory, else ``.seqera.yaml`` there;
3. ``SEQERA_*`` environment variables (:data:`KEYS`; an empty variable counts as unset);
4. command-line flags (a flag given as ``None`` was not given).

Labels merge name by name (the user file's ``team`` and the project's ``project`` both
apply; a later layer's ``team`` replaces an earlier one). A relative ``platform`` path
is relative to the file that names it. Nothing here reads global state: the caller
passes the environment, working directory and home directory.

```yaml
backend: slurm
platform: platforms/hpc.yaml
labels: {team: genomics}
auto_labels: [run-name, user]    # or all, or none
resolver: {url: "http://127.0.0.1:8080", timeout: 5}
ecs: {cluster: genomics, execution_role: "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"}
```

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

import contextlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from attrs import field, frozen

from .backends.registry import BACKENDS
from .dialects._values import LARGEST
from .dialects.human import SIZE_FORMS, parse_duration, parse_size
from .documents import decode_yaml, read_bounded
from .errors import ResourceError
from .labels import METADATA, string_labels
from .redaction import redacted
from .squash import SquashMode

__all__ = ["DEFAULTS", "KEYS", "Config", "checked_value", "key_value", "load_config"]

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
_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
DEFAULTS: Mapping[str, Any] = {"backend": "local", "auto_labels": "all"}
_MODES = tuple(m.value for m in SquashMode)
# the routing objectives (backends/route/_policy.OBJECTIVES; a test keeps them equal), not
# imported: that would import every backend with the config
_OBJECTIVES = ("finish", "cost", "cost-per-hour-saved")
_AUTO_FORMS = f"all, none, or a list of {', '.join(METADATA)}"


@frozen
class Config:
    """Merged values and, for each, the layer it came from.

    ``sources`` names a file path, ``$VARIABLE``, ``command line`` or ``default`` for each
    key, and for each label ``labels.<name>`` (``labels`` lists every layer that added one).
    """

    values: Mapping[str, Any] = field(factory=dict)
    sources: Mapping[str, str] = field(factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """The ``name.*`` values with the prefix removed: ``section("ecs")["cluster"]``."""
        prefix = f"{name}."
        return {k[len(prefix) :]: v for k, v in self.values.items() if k.startswith(prefix)}

    def get(self, key: str, default: Any = None) -> Any:
        """The merged value of ``key``."""
        return self.values.get(key, default)


def _flatten(document: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        # labels, and route's pin and overhead, are mappings of their own
        if isinstance(value, Mapping) and name not in ("labels", "route.pin", "route.overhead"):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _timeout(value: Any, where: str, key: str = "resolver.timeout") -> float:
    seconds = -1.0
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):  # float(10**400)
            seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ResourceError(f"{where}: {key}", value, "a number of seconds > 0")
    return seconds


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


def _text(key: str, value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
        raise ResourceError(f"{where}: {key}", value, "a non-empty string")
    return str(value)


def _list(key: str, value: Any, where: str) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ResourceError(f"{where}: {key}", value, "a list of names, or comma-separated text")
    cleaned = [i.strip() for i in items if i.strip()]
    if not cleaned:
        raise ResourceError(f"{where}: {key}", value, "at least one name")
    return cleaned


def _boolean(key: str, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _BOOLEANS[value.strip().lower()]
    raise ResourceError(f"{where}: {key}", value, "true or false")


def _whole(text: str) -> int | None:
    # int() refuses more than 4,300 digits (ValueError); no count or size needs 20.
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > len(str(LARGEST)):
        return None
    number = int(text)
    return number if 0 < number <= LARGEST else None


def _count(key: str, value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value) if 0 < value <= LARGEST else value
    number = _whole(value.strip()) if isinstance(value, str) else None
    if number is None:
        raise ResourceError(f"{where}: {key}", value, "an integer >= 1")
    return number


def _cores(key: str, value: Any, where: str) -> float:
    cores = -1.0
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):  # float(10**400)
            cores = float(value)
    if not math.isfinite(cores) or cores <= 0:
        raise ResourceError(f"{where}: {key}", value, "a number of cores > 0, e.g. 4 or 0.5")
    return cores


def _bytes(key: str, value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= LARGEST:
        return value
    if isinstance(value, str) and (number := _whole(value.strip())) is not None:
        return number
    if isinstance(value, str) and not value.strip().isdigit():
        return parse_size(value, f"{where}: {key}")
    raise ResourceError(f"{where}: {key}", value, f"whole bytes, or {SIZE_FORMS}")


def _check(key: str, value: Any, where: str) -> Any:
    if key not in KEYS:
        raise ResourceError(f"{where}: {key}", value, f"one of the keys {', '.join(KEYS)}")
    if key == "backend" and value not in BACKENDS:
        raise ResourceError(f"{where}: backend", value, f"one of {', '.join(BACKENDS)}")
    if key == "resolver.timeout":
        return _timeout(value, where)
    if key == "auto_labels":
        return _auto_labels(value, where)
    if key == "labels":
        return _labels(value, where)
    if key in ("route.pin", "route.overhead") and isinstance(value, Mapping):
        value = [f"{k}={v}" for k, v in value.items()]  # route: {pin: {align: slurm}}
    if key in _LISTS:
        return _route_list(key, _list(key, value, where), where)
    if key in ("ecs.assign_public_ip", "ecs.report_usage", "sizing.shrink_self_sizing",
               "slurm.requeue", "slurm.no_account", "batch.assign_public_ip",
               "batch.report_usage", "route.staged"):  # fmt: skip
        return _boolean(key, value, where)
    if key == "local.cpus":
        return _cores(key, value, where)
    if key == "local.memory":
        return _bytes(key, value, where)
    if key in ("ecs.max_spot_attempts", "squash.max_jobs", "squash.cpus",
               "batch.max_spot_attempts"):  # fmt: skip
        return _count(key, value, where)
    if key == "slurm.tmp" and str(value).strip().lower() not in ("auto", "always", "never"):
        raise ResourceError(f"{where}: {key}", value, "one of auto, always, never")
    if key == "route.objective" and str(value).strip() not in _OBJECTIVES:
        raise ResourceError(f"{where}: {key}", value, f"one of {', '.join(_OBJECTIVES)}")
    if key == "route.max_cost_per_hour_saved":
        return _amount(key, value, where)
    if key == "route.runtime":
        return _timeout(value, where, key)
    if key == "squash.mode" and str(value).strip().lower() not in _MODES:
        raise ResourceError(f"{where}: {key}", value, f"one of {', '.join(_MODES)}")
    text = _text(key, value, where)
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
        return _check(key, value, "")
    except ResourceError as exc:
        raise ResourceError(key, exc.value, exc.expected) from None


def _amount(key: str, value: Any, where: str) -> float:
    amount = -1.0
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            amount = float(value)
    if not (0 <= amount < math.inf):
        raise ResourceError(f"{where}: {key}", value, "a number >= 0 (an amount per hour saved)")
    return amount


def _route_list(key: str, items: list[str], where: str) -> list[str]:
    # route.backends: registry names; route.pin: RULE=BACKEND; route.overhead: BACKEND=SECONDS
    for item in items:
        if key == "route.backends":
            if item == "route" or item not in BACKENDS:
                others = ", ".join(b for b in BACKENDS if b != "route")
                raise ResourceError(f"{where}: {key}", item, f"one of {others}")
            continue
        if key.startswith("route."):
            name, sep, value = item.partition("=")
            if not sep or not name.strip() or not value.strip():
                wanted = "RULE=BACKEND" if key == "route.pin" else "BACKEND=SECONDS"
                raise ResourceError(f"{where}: {key}", item, wanted)
            if key == "route.overhead":
                try:
                    _timeout(value, where, key)
                except ResourceError:  # the pair as written, as every KEY=VALUE list says it
                    raise ResourceError(
                        f"{where}: {key}", item, "BACKEND=SECONDS, seconds a number > 0"
                    ) from None
    return items


def _file(path: Path) -> tuple[dict[str, Any], str] | None:
    if not path.is_file():
        return None
    text = read_bounded(path, str(path), "a readable YAML file")
    document = decode_yaml(text, str(path), yaml.SafeLoader) or {}
    if not isinstance(document, Mapping):
        raise ResourceError(str(path), document, "a YAML mapping of settings")
    values = {}
    for key, value in _flatten(document).items():
        checked = _check(str(key), value, str(path))
        if key == "platform":
            checked = str((path.parent / checked).resolve())
        values[str(key)] = checked
    return values, str(path)


def _merge(
    values: dict[str, Any], sources: dict[str, str], found: Mapping[str, Any], where: str
) -> None:
    for key, value in found.items():
        if key == "labels":
            values["labels"] = {**values.get("labels", {}), **value}
            sources.update({f"labels.{name}": where for name in value})
            layers = dict.fromkeys([*sources.get("labels", "").split(", "), where])
            sources["labels"] = ", ".join(layer for layer in layers if layer)
        else:
            values[key] = value
            sources[key] = where


def load_config(
    *,
    environ: Mapping[str, str],
    cwd: Path,
    home: Path,
    flags: Mapping[str, Any] | None = None,
) -> Config:
    """Merge every layer; flags whose value is ``None`` were not given and do not count."""
    values: dict[str, Any] = dict(DEFAULTS)
    sources: dict[str, str] = dict.fromkeys(DEFAULTS, "default")
    xdg = environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    project = (_file(cwd / name) for name in ("seqera.yaml", ".seqera.yaml"))
    for layer in (_file(Path(xdg) / "seqera" / "config.yaml"), next(filter(None, project), None)):
        if layer is not None:
            _merge(values, sources, *layer)
    for key, variable in KEYS.items():
        if environ.get(variable):
            _merge(
                values,
                sources,
                {key: _check(key, environ[variable], f"${variable}")},
                f"${variable}",
            )
    for key, value in (flags or {}).items():
        if value is not None:
            _merge(values, sources, {key: _check(key, value, "command line")}, "command line")
    return Config(values, sources)
