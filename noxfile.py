"""Every way to run the project: one test session per package, integration, lint.

``uvx nox`` runs them all (the README's test command); ``uvx nox -s core`` one.
"""

from __future__ import annotations

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
CORE = "packages/seqera-core[http,ecs,postgresql,report]"
SNAKEMAKE = "snakemake>=9,<10"

# session name -> (packages to install editable, test folder, extra test requirements)
PACKAGES: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    # snakemake and cwltool are the oracles the unit dialects are checked against.
    "core": (
        (CORE, "tests/fixtures/seqera-test-resolver"),
        "tests/seqera_core",
        # playwright drives Debian's chromium (the report's page in a real browser)
        (SNAKEMAKE, "cwltool>=3.1", "playwright>=1.40"),
    ),
    "snakemake": (
        (CORE, "packages/snakemake-executor-plugin-seqera", "tests/fixtures/seqera-test-resolver"),
        "tests/snakemake_executor_plugin_seqera",
        (SNAKEMAKE,),
    ),
    "cwl": ((CORE, "packages/cwltool-seqera"), "tests/cwltool_seqera", ()),
    "nextflow": (
        (CORE, "packages/seqera-nextflow-sidecar"),
        "tests/seqera_sidecar",
        ("schemathesis>=4",),
    ),
    "integration": (
        (
            CORE,
            "packages/snakemake-executor-plugin-seqera",
            "packages/cwltool-seqera",
            "packages/seqera-nextflow-sidecar",
        ),
        "tests/integration",
        # playwright: the report of real Slurm runs is looked at in Debian's chromium
        (SNAKEMAKE, "snakemake-storage-plugin-s3", "moto[server]>=5.0", "playwright>=1.40"),
    ),
}
# Faults injected into the real components of the integration suite, with its fixtures:
# installed the same way.
PACKAGES["faults"] = (PACKAGES["integration"][0], "tests/faults", PACKAGES["integration"][2])


def _install(session: nox.Session, packages: tuple[str, ...], extra: tuple[str, ...]) -> None:
    editable = [arg for package in packages for arg in ("-e", package)]
    session.install(*editable, *nox.project.dependency_groups(PYPROJECT, "test"), *extra)


def _make(name: str, packages: tuple[str, ...], folder: str, extra: tuple[str, ...]) -> None:
    @nox.session(name=name)
    def tests(session: nox.Session) -> None:
        _install(session, packages, extra)
        # pytest exits 5 when it collects nothing; nox fails on it, as it should.
        session.run("pytest", folder, *session.posargs, env={"PYTHONHASHSEED": "0"})

    tests.__doc__ = f"Run {folder}."


for _name, (_packages, _folder, _extra) in PACKAGES.items():
    _make(_name, _packages, _folder, _extra)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, built with --strict; the reference pages come from the code."""
    packages = tuple(
        dict.fromkeys(p for spec in PACKAGES.values() for p in spec[0] if not p.startswith("tests"))
    )
    session.install(*(arg for package in packages for arg in ("-e", package)), SNAKEMAKE)
    session.install("mkdocs>=1.6", "mkdocs-material>=9.5")
    session.run("mkdocs", "build", "--strict", "--site-dir", session.create_tmp() + "/site")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy over every package and the tests."""
    _install(session, tuple(dict.fromkeys(p for spec in PACKAGES.values() for p in spec[0])), ())
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"), "types-PyYAML")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
