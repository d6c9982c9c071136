"""Platform definitions: what can run where, and at what price.

A definition (YAML: scheduler, queues with limits and cost rates, a default queue,
multipliers) is read by ``_definitions``; ``_validation`` checks a request against it and
chooses the queue; ``_limits`` caps a request by resource limits (Nextflow's
``resourceLimits`` semantics) and ``_checks`` warns of values that are valid but probably
not meant. Validation needs the definitions' types, never the other way round.

The names are imported on first use (PEP 562): ``seqera_core`` itself re-exports
``apply_limits``, and reading a platform file needs YAML and the instance catalogues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ._checks import suspicious
    from ._definitions import (
        SCHEDULERS,
        CostRates,
        Multipliers,
        Platform,
        Queue,
        load,
        parse,
        read_document,
    )
    from ._generate import platform_yaml
    from ._limits import Capped, apply_limits, cap
    from ._validation import ValidationReport, validate

# each public name and the module that defines it
_HOMES = {
    "suspicious": "_checks",
    "platform_yaml": "_generate",
    "SCHEDULERS": "_definitions",
    "CostRates": "_definitions",
    "Multipliers": "_definitions",
    "Platform": "_definitions",
    "Queue": "_definitions",
    "load": "_definitions",
    "parse": "_definitions",
    "read_document": "_definitions",
    "Capped": "_limits",
    "apply_limits": "_limits",
    "cap": "_limits",
    "ValidationReport": "_validation",
    "validate": "_validation",
}

__all__ = [
    "SCHEDULERS",
    "Capped",
    "CostRates",
    "Multipliers",
    "Platform",
    "Queue",
    "ValidationReport",
    "apply_limits",
    "cap",
    "load",
    "parse",
    "platform_yaml",
    "read_document",
    "suspicious",
    "validate",
]

__getattr__ = exports(__name__, _HOMES)
