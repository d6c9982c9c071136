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
    SLURM_COMMENT_MAX,
    decode_labels,
    ecs_tags,
    encode_labels,
    label_environment,
    pbs_args,
    pbs_variables,
    run_labels,
    slurm_comment_args,
    string_labels,
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


def test_metadata_off_and_a_lone_name_is_not_a_list() -> None:
    assert run_labels("nextflow", METADATA, auto="none") == {}
    with pytest.raises(ResourceError, match="autoLabels"):
        run_labels("nextflow", METADATA, auto="user")  # type: ignore[arg-type]
    with pytest.raises(ResourceError, match="label name"):
        run_labels("nextflow", {}, {"": "x"})


def test_values_are_coerced_the_same_way_everywhere() -> None:
    assert string_labels({"a": None, 1: 2.5, "t": True}) == {"a": "", "1": "2.5", "t": "true"}
    assert task_delta({"resume": "true"}, {"resume": True}) == {}  # same once coerced


def test_task_delta_empty_and_colliding_cases() -> None:
    assert task_delta({}, {}) == {}
    assert task_delta({}, {"a": 1}) == {"a": "1"}  # no baseline: everything is new
    baseline = run_labels("nextflow", METADATA, {"team": "genomics"})
    # a task label colliding with a metadata label is a delta only if it differs
    assert task_delta(baseline, {"nextflow/user": "ana"}) == {}
    assert task_delta(baseline, {"nextflow/user": "bob"}) == {"nextflow/user": "bob"}
    assert task_delta(baseline, {"team": ""}) == {"team": ""}  # emptied is a change


def test_encoding_examples() -> None:
    labels = {"b": "x y", "a": "1,2", "k=v": "$(id)"}
    assert encode_labels(labels) == "a=1%2C2;b=x%20y;k%3Dv=%24%28id%29"
    assert encode_labels({}) == "" and decode_labels("") == {}


def test_slurm_comment_is_capped_by_whole_pairs() -> None:
    labels = {f"k{i:03}": "v" * 50 for i in range(40)}
    (arg,) = slurm_comment_args(labels)
    text = arg.removeprefix("--comment=")
    assert len(text) <= SLURM_COMMENT_MAX
    kept = decode_labels(text)
    assert kept and all(labels[k] == v for k, v in kept.items())  # nothing half-kept
    assert len(kept) < len(labels)
    assert slurm_comment_args({}) == []
    # a pair too long on its own is left out, the rest still fit
    assert decode_labels(encode_labels({"a": "1", "b": "x" * 2000}, 100)) == {"a": "1"}


def test_pbs_job_variables() -> None:
    labels = {"team": "a,b", "q": 'say "hi"'}
    assert pbs_variables(labels) == {"SEQERA_LABELS": "q=say%20%22hi%22;team=a%2Cb"}
    assert pbs_args(labels) == ["-v", "SEQERA_LABELS=q=say%20%22hi%22;team=a%2Cb"]
    assert pbs_args({}) == [] and pbs_variables({}) == {}


def test_environment_names_are_valid() -> None:
    assert label_environment({"run-id": "x", "é b": "y"}) == {
        "SEQERA_LABEL_RUN_ID": "x",
        "SEQERA_LABEL___B": "y",
    }


def test_ecs_values_and_empty_keys() -> None:
    assert ecs_tags({"": "x", "owner": "AWS:me", "n": "a\nb"}) == [
        {"key": "n", "value": "a_b"},
        {"key": "owner", "value": "_AWS:me"},
    ]


_OPTION_NAMES = {"--comment", "-v"}


@given(st.dictionaries(hostile, hostile, max_size=8), st.integers(0, 200))
def test_no_backend_form_can_break_out(labels: dict[str, str], limit: int) -> None:
    argv = [*slurm_comment_args(labels), *pbs_args(labels)]
    for element in argv:
        assert "\n" not in element and "\x00" not in element
        flag, _, value = element.partition("=")
        # our own options only; a label never starts an element or a value with a dash
        assert not element.startswith("-") or flag in _OPTION_NAMES
        assert "," not in value and '"' not in value and "'" not in value
    assert shlex.split(shlex.join(argv)) == argv
    for name in label_environment(labels):
        assert re.fullmatch(r"SEQERA_LABEL_[A-Z0-9_]*", name)
    capped = decode_labels(encode_labels(labels, limit))
    assert len(encode_labels(labels, limit)) <= limit
    assert all(labels[k] == v for k, v in capped.items())


@given(st.dictionaries(st.text(), st.text(), max_size=8))
def test_any_text_round_trips(labels: dict[str, str]) -> None:
    assert decode_labels(encode_labels(labels)) == labels
    assert re.fullmatch(r"[A-Za-z0-9_.:/@+~%=;-]*", encode_labels(labels))
