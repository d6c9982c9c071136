"""Passwords in history and resolver URLs never reach a message, a log or a page."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqera_core.cli import main
from seqera_core.redaction import masked, redacted


def test_a_password_in_the_userinfo_or_the_query_is_masked() -> None:
    shown = redacted("postgresql://me:s3cret@db.example:5432/seqera")
    assert shown == "postgresql://me:***@db.example:5432/seqera"
    shown = redacted("postgresql://db.example/seqera?user=me&password=s3cret&sslmode=require")
    assert "s3cret" not in shown and "password=***" in shown and "sslmode=require" in shown
    assert redacted("/tmp/h.db") == "/tmp/h.db"
    assert redacted("http://[::1") == "http://[::1"  # nothing to hide, shown as written
    assert redacted("postgresql://alice:Sup3rS3cret@[::1/db") == "postgresql://***@[::1/db"
    assert redacted("postgresql://a:p@ss@[::1/db") == "postgresql://***@[::1/db"
    assert redacted("postgresql://[::1/db?password=x@y") == "(a URL that cannot be parsed)"


def test_a_drivers_message_loses_the_password() -> None:
    url = "postgresql://me:s3cret@db/seqera?sslpassword=k3y"
    text = 'connection to "db" failed: password "s3cret" and key k3y rejected\nmore'
    assert masked(text, url) == 'connection to "db" failed: password "***" and key *** rejected'


def test_seqera_config_shows_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("SEQERA_HISTORY", "postgresql://me:s3cret@db/seqera")
    monkeypatch.setenv("SEQERA_RESOLVER_URL", "https://bot:t0ken@opt.example/")
    monkeypatch.setenv("SEQERA_RESOLVER_TOKEN", "b3arer")
    assert main(["config", "--json"]) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out and "t0ken" not in out and "b3arer" not in out
    assert "postgresql://me:***@db/seqera" in out


def test_masking_parses_and_never_points_at_a_short_password() -> None:
    # Substring replacement turned "failed" into "f***ed" for the password "ail".
    url = "postgresql://alice:ail@db/seqera"
    assert masked('connection failed for user "alice": password "ail"', url) == (
        'connection failed for user "alice": password "***"'
    )
    # a URL quoted in a driver's message is shown as redacted() shows it
    text = 'invalid URI: "postgresql://alice:Sup3rS3cret@[::1/db" (no ])'
    assert masked(text) == 'invalid URI: "postgresql://***@[::1/db" (no ])'
    assert masked("host=db password='s p' port=5") == "host=db password=*** port=5"


BAD = "postgresql://alice:Sup3rS3cret@[::1/db"


@pytest.mark.parametrize(
    ("argv", "environ"),
    [(["run", "--history", BAD, "--", "touch", "ran"], {}),
     (["run", "--", "touch", "ran"], {"SEQERA_HISTORY": BAD}),
     (["report", "--json"], {"SEQERA_HISTORY": BAD}),
     (["run", "--history", "postgresql://alice:Sup3rS3cret@db:port/x", "--", "touch", "ran"],
      {})],
)  # fmt: skip
def test_a_malformed_postgresql_url_is_a_clear_error_without_the_password(
    tmp_path: Path, argv: list[str], environ: dict[str, str]
) -> None:
    import os
    import subprocess
    import sys

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SEQERA_")},
           "XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path), **environ}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "seqera_core.cli", *argv], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Sup3rS3cret" not in done.stderr
    assert "history: 'postgresql://alice:***@" in done.stderr or (
        "history: 'postgresql://***@[::1/db' is not valid" in done.stderr
    ), done.stderr
    assert not (tmp_path / "ran").exists()  # a configuration error: nothing ran
