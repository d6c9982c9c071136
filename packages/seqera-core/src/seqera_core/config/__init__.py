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

Every key, its variable and the values it takes: :mod:`seqera_core.config._keys`; how
each kind of value is read: ``_values``; the layers and their merge: ``_layers``.
"""

from __future__ import annotations

from ._keys import KEYS, checked_value, key_value
from ._layers import DEFAULTS, Config, load_config

__all__ = ["DEFAULTS", "KEYS", "Config", "checked_value", "key_value", "load_config"]
