"""The layers of the configuration merged, each over the one before, and where each value
came from (the order and the rules: the package's docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from attrs import field, frozen

from ..documents import decode_yaml, read_bounded
from ..errors import ResourceError
from ._keys import KEYS, check

__all__ = ["DEFAULTS", "Config", "load_config"]

DEFAULTS: Mapping[str, Any] = {"backend": "local", "auto_labels": "all"}


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


def _file(path: Path) -> tuple[dict[str, Any], str] | None:
    if not path.is_file():
        return None
    text = read_bounded(path, str(path), "a readable YAML file")
    document = decode_yaml(text, str(path), yaml.SafeLoader) or {}
    if not isinstance(document, Mapping):
        raise ResourceError(str(path), document, "a YAML mapping of settings")
    values = {}
    for key, value in _flatten(document).items():
        checked = check(str(key), value, str(path))
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
                {key: check(key, environ[variable], f"${variable}")},
                f"${variable}",
            )
    for key, value in (flags or {}).items():
        if value is not None:
            _merge(values, sources, {key: check(key, value, "command line")}, "command line")
    return Config(values, sources)
