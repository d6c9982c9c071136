"""Layered configuration: user file, project file, environment, command line.

Each layer overrides the one before, and every value remembers where it came from:
``$XDG_CONFIG_HOME/seqera/config.yaml`` (or ``~/.config/seqera/config.yaml``), then
``seqera.yaml`` or ``.seqera.yaml`` in the working directory, then ``SEQERA_*``
environment variables, then flags. Paths in a file are relative to that file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from attrs import field, frozen

from .errors import ResourceError
from .labels import METADATA

__all__ = ["KEYS", "Config", "load_config"]

BACKENDS = ("local", "slurm", "pbs", "torque", "ecs")
# key -> environment variable
KEYS: dict[str, str] = {
    "backend": "SEQERA_BACKEND",
    "platform": "SEQERA_PLATFORM",
    "resolver.url": "SEQERA_RESOLVER_URL",
    "resolver.token": "SEQERA_RESOLVER_TOKEN",
    "resolver.timeout": "SEQERA_RESOLVER_TIMEOUT",
    "auto_labels": "SEQERA_AUTO_LABELS",
    "labels": "SEQERA_LABELS",
}
_PATHS = {"platform"}


@frozen
class Config:
    """Merged values and, for each, the layer it came from."""

    values: Mapping[str, Any] = field(factory=dict)
    sources: Mapping[str, str] = field(factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        """The merged value of ``key``."""
        return self.values.get(key, default)


def _flatten(document: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name != "labels":
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _check(key: str, value: Any, where: str) -> Any:
    if key not in KEYS:
        raise ResourceError(f"{where}: {key}", value, f"one of the keys {', '.join(KEYS)}")
    if key == "backend" and value not in BACKENDS:
        raise ResourceError(f"{where}: backend", value, f"one of {', '.join(BACKENDS)}")
    if key == "resolver.timeout":
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = -1.0
        if not math.isfinite(seconds) or seconds <= 0:
            raise ResourceError(f"{where}: {key}", value, "a number of seconds > 0")
        return seconds
    if key == "auto_labels":
        names = value.split(",") if isinstance(value, str) else value
        if value in ("all", "none"):
            return value
        if not isinstance(names, list) or not set(map(str, names)) <= set(METADATA):
            expected = f"all, none, or a list of {', '.join(METADATA)}"
            raise ResourceError(f"{where}: auto_labels", value, expected)
        return [str(n).strip() for n in names]
    if key == "labels":
        if isinstance(value, str):  # SEQERA_LABELS=team=genomics,project=x
            pairs = [item.partition("=") for item in value.split(",") if item]
            if any(not sep or not k for k, sep, _ in pairs):
                raise ResourceError(f"{where}: labels", value, "KEY=VALUE[,KEY=VALUE...]")
            return {k.strip(): v for k, _, v in pairs}
        if not isinstance(value, Mapping):
            raise ResourceError(f"{where}: labels", value, "a mapping of label names to values")
        return {str(k): str(v) for k, v in value.items()}
    return value


def _file(path: Path) -> tuple[dict[str, Any], str] | None:
    if not path.is_file():
        return None
    document = yaml.safe_load(path.read_text()) or {}
    if not isinstance(document, Mapping):
        raise ResourceError(str(path), document, "a YAML mapping of settings")
    values = {}
    for key, value in _flatten(document).items():
        value = _check(key, value, str(path))
        if key in _PATHS and value is not None:
            value = str((path.parent / str(value)).resolve())
        values[key] = value
    return values, str(path)


def load_config(
    *,
    environ: Mapping[str, str],
    cwd: Path,
    home: Path,
    flags: Mapping[str, Any] | None = None,
) -> Config:
    """Merge every layer; flags whose value is ``None`` were not given and do not count."""
    values: dict[str, Any] = {"backend": "local", "auto_labels": "all"}
    sources: dict[str, str] = {"backend": "default", "auto_labels": "default"}
    xdg = environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    layers = [_file(Path(xdg) / "seqera" / "config.yaml")]
    layers.append(
        next(filter(None, (_file(cwd / n) for n in ("seqera.yaml", ".seqera.yaml"))), None)
    )
    for layer in layers:
        if layer is not None:
            found, where = layer
            values.update(found)
            sources.update(dict.fromkeys(found, where))
    for key, variable in KEYS.items():
        if environ.get(variable):
            values[key] = _check(key, environ[variable], f"${variable}")
            sources[key] = f"${variable}"
    for key, value in (flags or {}).items():
        if value is not None:
            values[key] = _check(key, value, "command line")
            sources[key] = "command line"
    return Config(values, sources)
