"""The configs that apply the advice, read back by each engine's own notation."""

from __future__ import annotations

import yaml

from seqera_core.dialects.nextflow import parse_duration, parse_memory
from seqera_core.report import Advice
from seqera_core.report._snippets import nextflow_config, nextflow_directives, snakemake_profile
from seqera_core.units import GIB, MB

ADVICE = [
    Advice("FASTQC", 1.5, 3 * GIB + 1, 3601, 10, 1.0, 0.5, 0),
    Advice("NFCORE:ALIGN", 4, None, None, 2, 0.0, 0.0, 0),
    Advice("it's", 1, 100 * MB, 59, 1, 0.0, 0.0, 0),
]


def test_nextflow_values_never_give_less_than_advised() -> None:
    values = nextflow_directives(ADVICE[0])
    assert values == {"cpus": "2", "memory": "'3073 MB'", "time": "'1h 1m'"}
    assert parse_memory(values["memory"].strip("'")) >= ADVICE[0].memory  # type: ignore[operator]
    assert parse_duration(values["time"].strip("'")) >= 3601
    assert nextflow_directives(ADVICE[1]) == {"cpus": "4"}  # nothing measured: nothing said


def test_nextflow_config_quotes_names() -> None:
    text = nextflow_config(ADVICE)
    assert "    withName: 'FASTQC' { cpus = 2; memory = '3073 MB'; time = '1h 1m' }" in text
    assert "withName: 'it\\'s' {" in text
    assert text.startswith("//") and text.rstrip().endswith("}")


def test_snakemake_profile_is_yaml_with_rounded_up_values() -> None:
    document = yaml.safe_load(snakemake_profile(ADVICE))
    assert document["set-threads"] == {"FASTQC": 2, "NFCORE:ALIGN": 4, "it's": 1}
    assert document["set-resources"] == {
        "FASTQC": {"mem_mb": 3222, "runtime": 61},
        "it's": {"mem_mb": 100, "runtime": 1},
    }
