"""The CommandLineTool class of a run: its jobs, contained or not, go to the run's backend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from cwltool.command_line_tool import CommandLineTool
from cwltool.context import LoadingContext, RuntimeContext
from cwltool.job import CommandLineJob, JobBase
from cwltool.process import Process
from cwltool.workflow import default_make_tool

from ._container_job import SeqeraContainerJob
from ._job import RunSettings, SeqeraCommandLineJob

if TYPE_CHECKING:
    # cwltool's own loader type (ruamel.yaml comes with cwltool)
    from ruamel.yaml.comments import CommentedMap

__all__ = ["SeqeraCommandLineTool", "ToolFactory", "make_tool_factory"]


class SeqeraCommandLineTool(CommandLineTool):
    """A CommandLineTool whose jobs go to the run's backend."""

    job_class: type[SeqeraCommandLineJob]
    # cwltool's container job class -> this run's subclass of it (made once per class)
    container_classes: dict[type[JobBase], type[JobBase]]

    def make_job_runner(self, runtimeContext: RuntimeContext) -> type[JobBase]:
        """cwltool's choice (``cwltool/command_line_tool.py``), dispatched by this run.

        The plain local job becomes this run's job class; a container job (Docker,
        Podman, Singularity, udocker) becomes cwltool's class with this run's dispatching
        in front. On ECS the task's image is the container (cwltool runs with
        --no-container there), so a DockerRequirement under ``requirements`` names the
        image instead of being refused by cwltool's --no-container check.
        """
        if self.job_class.settings.staging is not None and not runtimeContext.use_container:
            return self.job_class
        chosen = super().make_job_runner(runtimeContext)
        if chosen is CommandLineJob:
            return self.job_class
        made = self.container_classes.get(chosen)
        if made is None:
            made = type(
                f"Seqera{chosen.__name__}",
                (SeqeraContainerJob, chosen),
                {"settings": self.job_class.settings},
            )
            self.container_classes[chosen] = made
        return made


class ToolFactory(Protocol):
    """The signature of ``LoadingContext.construct_tool_object``."""

    def __call__(self, toolpath_object: CommentedMap, loadingContext: LoadingContext) -> Process:
        """Build the process object for one loaded CWL document."""


def make_tool_factory(settings: RunSettings) -> ToolFactory:
    """A ``construct_tool_object`` for this run: CommandLineTools become seqera ones."""
    job_class = type("SeqeraCommandLineJob", (SeqeraCommandLineJob,), {"settings": settings})
    tool_class = cast(
        type[SeqeraCommandLineTool],
        type(
            "SeqeraCommandLineTool",
            (SeqeraCommandLineTool,),
            {"job_class": job_class, "container_classes": {}},
        ),
    )

    def make_tool(toolpath_object: CommentedMap, loadingContext: LoadingContext) -> Process:
        if (
            isinstance(toolpath_object, Mapping)
            and toolpath_object.get("class") == "CommandLineTool"
        ):
            return tool_class(toolpath_object, loadingContext)
        return default_make_tool(toolpath_object, loadingContext)

    return make_tool
