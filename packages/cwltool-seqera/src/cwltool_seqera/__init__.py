"""cwltool-seqera: not yet implemented beyond installing; see the project's issues."""

__version__ = "0.1.0"

__all__: list[str] = []
