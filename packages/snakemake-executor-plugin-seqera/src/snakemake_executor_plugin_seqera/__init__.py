"""snakemake-executor-plugin-seqera: installs; the engine integration is a later issue."""

__version__ = "0.1.0"

__all__: list[str] = []
