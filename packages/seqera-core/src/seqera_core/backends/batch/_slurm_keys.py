"""Submission keys in Slurm job comments: written by ``sbatch --comment``, read back from
``squeue`` and ``sacct``.

Every submission carries its key (``_jobdir.submission_key``) as the first pair of its
``--comment`` (``seqera-submission=<key>``, before the labels, within slurmctld's 1024
bytes). ``squeue -O ArrayJobID,Comment`` lists the comments of the jobs slurmctld still
holds (``MinJobAge`` after they end); ``sacct -o JobID,Comment`` those slurmdbd keeps, when
``AccountingStoreFlags=job_comment`` (``man slurmdbd.conf``) tells it to.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...labels import SLURM_COMMENT_MAX, decode_labels, encode_labels

__all__ = [
    "SUBMISSION_LABEL",
    "comment_args",
    "parse_sacct_keys",
    "parse_squeue_keys",
    "submission_key_of",
]

# The comment pair that holds a submission's key; decode_labels() shows it like a label.
SUBMISSION_LABEL = "seqera-submission"


def comment_args(key: str, labels: Mapping[str, str]) -> list[str]:
    """``["--comment=seqera-submission=<key>;<labels>"]``: the key first, then as many
    labels as fit in slurmctld's 1024 bytes (``labels.encode_labels``). One argv element:
    ``=`` binds the value, so a value can never be read as an option."""
    head = encode_labels({SUBMISSION_LABEL: key})
    rest = encode_labels(
        {k: v for k, v in labels.items() if k != SUBMISSION_LABEL},
        SLURM_COMMENT_MAX - len(head) - 1,
    )
    return [f"--comment={head};{rest}" if rest else f"--comment={head}"]


def submission_key_of(comment: str) -> str | None:
    """The submission key in a job's comment, or None for a job seqera did not submit."""
    if not comment.startswith(SUBMISSION_LABEL + "="):
        return None
    return decode_labels(comment.partition(";")[0]).get(SUBMISSION_LABEL)


def parse_squeue_keys(text: str) -> dict[str, str]:
    """Submission key -> job id (an array's own id) from ``squeue -O ArrayJobID:|,Comment:|``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        job_id, _, comment = line.partition("|")
        key = submission_key_of(comment.strip().rstrip("|"))
        if key and job_id.strip():
            found[key] = job_id.strip()
    return found


def parse_sacct_keys(text: str) -> dict[str, str]:
    """Submission key -> job id from ``sacct -n -P -X -o JobID,Comment``: an array's
    elements (``123_4``, pending ones ``123_[5-9]``) give the array's own id."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        job_id, _, comment = line.partition("|")
        key = submission_key_of(comment.strip())
        if key and job_id.strip():
            found[key] = job_id.strip().partition("_")[0]
    return found
