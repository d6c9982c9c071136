"""Task definitions by hash: an existing revision with the same hash tag is reused.

A family (``seqera-<image>``) gathers the shapes used with one image. The first time a
family is needed its ACTIVE revisions are listed, newest first, and described one at a
time (with their tags) only until the hash sought turns up; every hash seen is remembered,
so a process describes each revision at most once and registers only what no run before
it registered. Two processes racing may both register a shape: harmless, the next run
reuses whichever it meets first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._payloads import HASH_TAG

__all__ = ["TaskDefinitions"]


class TaskDefinitions:
    """Task definition ARNs by hash, found or registered through an ECS client."""

    def __init__(self, ecs: Any, call: Callable[..., Any]) -> None:
        self._ecs = ecs
        self._call = call  # wraps each call (error handling)
        self._arns: dict[str, str] = {}  # hash -> ARN
        self._unscanned: dict[str, list[str]] = {}  # family -> revisions not yet described

    def arn(self, body: dict[str, Any], digest: str) -> str:
        """The ARN of a definition whose hash tag is ``digest``; registers ``body`` if none."""
        if digest in self._arns:
            return self._arns[digest]
        family = body["family"]
        if family not in self._unscanned:
            self._unscanned[family] = self._revisions(family)
        pending = self._unscanned[family]
        while pending:
            arn = pending.pop(0)
            found = self._call(
                self._ecs.describe_task_definition, taskDefinition=arn, include=["TAGS"]
            )
            tags = {t["key"]: t["value"] for t in found.get("tags") or []}
            if HASH_TAG in tags:
                self._arns.setdefault(tags[HASH_TAG], arn)
            if tags.get(HASH_TAG) == digest:
                return arn
        registered = self._call(self._ecs.register_task_definition, **body)
        arn = str(registered["taskDefinition"]["taskDefinitionArn"])
        self._arns[digest] = arn
        return arn

    def _revisions(self, family: str) -> list[str]:
        arns: list[str] = []
        params = {"familyPrefix": family, "status": "ACTIVE", "sort": "DESC"}
        while True:  # paginated by nextToken; the newest revisions come first
            page = self._call(self._ecs.list_task_definitions, **params)
            arns += page.get("taskDefinitionArns") or []
            if not page.get("nextToken"):
                return arns
            params["nextToken"] = page["nextToken"]
