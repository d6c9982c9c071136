"""cwltool-seqera: a drop-in cwltool command line that dispatches each CWL job to a backend."""

from ._containers import ContainerPolicy
from ._executor import DispatchingExecutor
from ._job import RunSettings, SeqeraCommandLineJob, job_request
from ._main import main, make_session, staging_arguments
from ._options import SeqeraOptions, parse_options
from ._poller import JobPoller
from ._staging import S3Staging, StagingError
from ._status import process_status, status_message
from ._tool import ToolFactory, make_tool_factory

__version__ = "0.1.0"

__all__ = [
    "ContainerPolicy",
    "DispatchingExecutor",
    "JobPoller",
    "RunSettings",
    "S3Staging",
    "SeqeraCommandLineJob",
    "SeqeraOptions",
    "StagingError",
    "ToolFactory",
    "job_request",
    "main",
    "make_session",
    "make_tool_factory",
    "parse_options",
    "process_status",
    "staging_arguments",
    "status_message",
]
