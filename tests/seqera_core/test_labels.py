"""Run baseline, task delta, and hostile values in every backend's form of labels."""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core import ResourceError, ResourceRequest
from seqera_core.dialects import slurm
from seqera_core.labels import (
    decode_labels,
    ecs_tags,
    encode_labels,
    run_labels,
    task_delta,
)

METADATA = {"run-name": "happy_turing", "run-id": "a1b2", "resume": True, "user": "ana"}


def test_run_baseline_prefixes_metadata_and_user_labels_win() -> None:
    labels = run_labels("nextflow", METADATA, {"team": "genomics", "nextflow/user": "lab"})
    assert labels == {
        "nextflow/run-name": "happy_turing",
        "nextflow/run-id": "a1b2",
        "nextflow/resume": "true",
        "nextflow/user": "lab",  # the user's label wins the collision
        "team": "genomics",
    }


@pytest.mark.parametrize(
    ("auto", "keys"),
    [
        ("none", {"team"}),
        (["run-id"], {"snakemake/run-id", "team"}),
        ([], {"team"}),
    ],
)
def test_auto_labels_choose_the_metadata(auto: object, keys: set[str]) -> None:
    assert set(run_labels("snakemake", METADATA, {"team": 1}, auto=auto)) == keys  # type: ignore[arg-type]


def test_values_are_strings_and_unknown_names_are_errors() -> None:
    assert run_labels("cwl", {}, {"n": 3, "b": False}) == {"n": "3", "b": "false"}
    with pytest.raises(ResourceError, match=r"metadata\.runName"):
        run_labels("cwl", {"runName": "x"})
    with pytest.raises(ResourceError, match="autoLabels"):
        run_labels("cwl", METADATA, auto=["nope"])


def test_task_delta() -> None:
    baseline = {"team": "genomics", "nextflow/run-id": "a1b2"}
    assert task_delta(baseline, {}) == {}
    assert task_delta(baseline, {"team": "genomics"}) == {}  # same value: no delta
    assert task_delta(baseline, {"team": "imaging", "sample": 7}) == {
        "team": "imaging",
        "sample": "7",
    }


hostile = st.lists(
    st.sampled_from([*"ab =;,'\"$()`\\\n\t-%", "--comment", "é", "\x00"]), max_size=12
).map("".join)


@given(st.dictionaries(hostile, hostile, max_size=6))
def test_slurm_comment_round_trips_and_cannot_break_out(labels: dict[str, str]) -> None:
    text = encode_labels(labels)
    assert decode_labels(text) == labels
    assert re.fullmatch(r"[A-Za-z0-9_.:/@+~%=;-]*", text)  # no space, quote, comma, newline
    argv = [*slurm.submission(ResourceRequest()).args, f"--comment={text}"]
    assert shlex.split(shlex.join(argv)) == argv


@given(st.dictionaries(st.text(max_size=300), st.text(max_size=300), max_size=50))
def test_ecs_tags_follow_aws_rules(labels: dict[str, str]) -> None:
    for tag in ecs_tags(labels):
        assert 1 <= len(tag["key"]) <= 128 and len(tag["value"]) <= 256
        assert not tag["key"].lower().startswith("aws:")
        assert re.fullmatch(r"[\w .:/=+\-@]*", tag["key"] + tag["value"])


def test_ecs_tags_examples_and_limit() -> None:
    assert ecs_tags({"aws:owner": "me", "run id": "a;b"}) == [
        {"key": "_aws:owner", "value": "me"},
        {"key": "run id", "value": "a_b"},
    ]
    with pytest.raises(ResourceError, match="50"):
        ecs_tags({str(i): "x" for i in range(51)})
