"""Build a backend by name, importing only the one asked for (ECS brings boto3)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..config import Config
from ..errors import UsageError
from ..platforms import Platform
from ..squash import SquashMode, SquashPolicy
from .base import Backend

__all__ = ["BACKENDS", "open_backend", "squash_policy"]

# name -> (module, class, fixed options); a backend's module is imported only when asked for.
_FACTORIES: dict[str, tuple[str, str, Mapping[str, Any]]] = {
    "local": ("seqera_core.backends.local", "LocalBackend", {}),
    "slurm": ("seqera_core.backends.slurm", "SlurmBackend", {}),
    "pbs": ("seqera_core.backends.pbs", "PbsBackend", {"dialect": "pro"}),
    "torque": ("seqera_core.backends.pbs", "PbsBackend", {"dialect": "torque"}),
    "ecs": ("seqera_core.backends.ecs", "EcsBackend", {}),
}
BACKENDS = tuple(_FACTORIES)
_BATCH = ("slurm", "pbs", "torque")


def squash_policy(config: Config, platform: Platform | None = None) -> SquashPolicy:
    """The platform's squash policy (off without one), with the config's ``squash.*`` over it."""
    base = platform.squash if platform is not None else SquashPolicy()
    return base.merged(config.section("squash"))


def open_backend(
    name: str,
    *,
    squash: SquashPolicy | None = None,
    preload: Sequence[str] = (),
    **options: Any,
) -> Backend:
    """A new backend called ``name`` built with ``options`` (its constructor's keywords).

    ``squash`` puts jobs together on a batch scheduler: arrays, or squashed allocations
    (then the backend returned wraps the scheduler's, and ``preload`` names the Python
    entry points its launchers load once, see :class:`SquashBackend`).

    Raises:
        UsageError: the name is unknown, the backend's module (or extra) is not
            installed, or squashing was asked of a backend that is not a batch scheduler.
    """
    if name not in _FACTORIES:
        raise UsageError(f"backend: {name!r} is not one of {', '.join(BACKENDS)}")
    policy = squash or SquashPolicy()
    if policy.mode is not SquashMode.OFF and name not in _BATCH:
        raise UsageError(
            f"squash: {policy.mode.value!r} needs a batch scheduler ({', '.join(_BATCH)}); "
            f"the {name} backend runs each job on its own (set squash to off)"
        )
    module_name, class_name, fixed = _FACTORIES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UsageError(f"backend {name!r} is not available in this version") from None
        # A missing client library: name the extra that brings it.
        raise UsageError(
            f"backend {name!r} needs {exc.name}, which is not installed; "
            f"install seqera-core[{name}]"
        ) from None
    factory: Any = getattr(module, class_name, None)
    if factory is None:
        raise UsageError(f"backend {name!r} is not available: {module_name} has no {class_name}")
    if name == "ecs":
        return _ecs(module, options)
    if name not in _BATCH:
        if name == "local" and preload:  # its fork server loads them once for all jobs
            options = {**options, "preload": preload}
        backend: Backend = factory(**fixed, **options)
        return backend
    batch = factory(**fixed, **options, squash=policy)
    if policy.mode is SquashMode.SQUASH:
        from ._squash import SquashBackend

        return SquashBackend(batch, policy, preload=preload)
    return batch  # type: ignore[no-any-return]


def _ecs(module: Any, options: Mapping[str, Any]) -> Backend:
    # ECS takes one settings object: the options are its fields (the config's ecs.* keys).
    for key in ("cluster", "execution_role"):
        if not options.get(key):
            raise UsageError(
                f"ecs.{key} is required for the ecs backend: set it in seqera.yaml "
                f"(ecs: {{{key}: ...}}) or as $SEQERA_ECS_{key.upper()}"
            )
    backend: Backend = module.EcsBackend(module.EcsSettings(**options))
    return backend
