"""The cwltool-seqera distribution installs, imports and builds on seqera-core."""

from __future__ import annotations

from importlib import metadata

import cwltool_seqera


def test_installed_with_its_version() -> None:
    assert metadata.version("cwltool-seqera") == cwltool_seqera.__version__


def test_depends_on_the_core() -> None:
    requirements = metadata.requires("cwltool-seqera") or []
    assert any(r.split(";")[0].strip().startswith("seqera-core") for r in requirements)
    assert cwltool_seqera.__all__ == sorted(cwltool_seqera.__all__)
