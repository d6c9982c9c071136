"""The backend registry: one name per backend, imported only when asked for, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.backends import (
    BACKENDS,
    LocalBackend,
    PbsBackend,
    SlurmBackend,
    open_backend,
    registry,
)
from seqera_core.dialects.local import submission as local_submission
from seqera_core.errors import UsageError
from seqera_core.models import ResourceRequest


def test_each_batch_backend_by_name(tmp_path: Path) -> None:
    assert isinstance(open_backend("slurm", work_dir=str(tmp_path)), SlurmBackend)
    pro, torque = open_backend("pbs"), open_backend("torque")
    assert isinstance(pro, PbsBackend) and pro.dialect == "pro" and pro.name == "pbs"
    assert isinstance(torque, PbsBackend) and torque.dialect == "torque"


def test_local_takes_its_own_options() -> None:
    backend = open_backend("local", cpus=3, memory=10**9)
    assert isinstance(backend, LocalBackend)
    assert (backend.capacity_cpus, backend.capacity_memory) == (3.0, 10**9)


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UsageError, match=r"backend: 'condor' is not one of local, slurm"):
        open_backend("condor")
    assert "ecs" in BACKENDS


def test_a_missing_module_is_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = registry.BackendEntry("ecs", "seqera_core.backends._not_written_yet", "X")
    monkeypatch.setitem(registry._installed(), "ecs", missing)
    with pytest.raises(UsageError, match="backend 'ecs' is not available in this version"):
        open_backend("ecs")


def test_a_missing_client_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The backend's module exists but the library it imports does not: the user needs the extra.
    (tmp_path / "seqera_test_ecs_backend.py").write_text("import not_a_real_aws_client\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        registry._installed(), "ecs", registry.BackendEntry("ecs", "seqera_test_ecs_backend", "X")
    )
    with pytest.raises(UsageError, match=r"needs not_a_real_aws_client.*seqera-core\[ecs\]"):
        open_backend("ecs")


def test_every_entry_names_its_kind_and_dialect() -> None:
    assert registry.BATCH == ("slurm", "pbs", "torque", "sge", "lsf")
    assert [registry.entry(n).shared_fs for n in BACKENDS] == [True] * 6 + [False] * 2 + [True]
    # AWS Batch is no batch scheduler of the registry's (no shared files, no squashing)
    # but sends arrays itself
    assert [n for n in BACKENDS if registry.entry(n).arrays] == ["batch"]
    assert [n for n in BACKENDS if registry.entry(n).composite] == ["route"]
    request = ResourceRequest(cpus=2, memory=2**30, time=60)
    assert registry.entry("local").submission(request) == local_submission(request)
    written = registry.entry("batch").submission(request)
    assert written.native["timeout"] == {"attemptDurationSeconds": 60}
    assert registry.entry("slurm").submission(request).backend == "slurm"
    # Grid Engine's writer takes the site's settings (its memory resource)
    site = registry.entry("sge").submission(request, {"memory": "h_rss"})
    assert site.args == ("-pe", "smp", "2", "-l", "h_rt=0:01:00,h_rss=512M")
    # and LSF's its unit of limits
    site = registry.entry("lsf").submission(request, {"unit": "MB"})
    assert site.args == ("-n", "2", "-R", "span[hosts=1]", "-R", "rusage[mem=1024]",
                         "-M", "1024", "-W", "1")  # fmt: skip


def test_a_setting_the_backend_does_not_take_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"backend slurm: .*colour"):
        open_backend("slurm", colour="blue")
