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
    assert redacted("http://[::1") == "(a URL that cannot be parsed)"


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
