"""Secrets kept out of what people read: URLs' passwords in messages, logs and settings."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = ["masked", "redacted"]

_SECRET_PARAMETERS = ("password", "passfile", "sslpassword", "token", "access_token")


def _unparsed(url: str) -> str:
    """A URL urllib cannot split (``[::1`` without its ``]``), its user information cut
    whole: everything from ``://`` to the last ``@`` (a password may hold ``@`` and ``:``
    but the host cannot). One naming a secret parameter is not shown at all."""
    scheme, sep, rest = url.partition("://")
    lowered = rest.lower()
    if not sep or any(name in lowered for name in _SECRET_PARAMETERS):
        return "(a URL that cannot be parsed)"
    if "@" not in rest:
        return url
    return f"{scheme}://***@{rest.rpartition('@')[2]}"


def redacted(url: str) -> str:
    """``url`` with its password (in the userinfo or as ``?password=``) shown as ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return _unparsed(url)
    secret_query = any(
        k.lower() in _SECRET_PARAMETERS for k, _ in parse_qsl(parts.query, keep_blank_values=True)
    )
    if password is None and not secret_query:
        # as written: urlsplit drops control characters and spaces it would not keep
        return url
    netloc = parts.netloc
    if password is not None:
        user = f"{parts.username}:***@" if parts.username else ":***@"
        netloc = user + parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, "***" if k.lower() in _SECRET_PARAMETERS else v) for k, v in pairs], safe="*"
        )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


# A URL inside a message (up to a space or a quote), and a conninfo keyword with a secret
# ("password=x", libpq's key=value form, quoted or not).
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
_SECRET_KEYWORD = re.compile(
    r"\b(" + "|".join(_SECRET_PARAMETERS) + r")(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s,;)]+)",
    re.IGNORECASE,
)


def _secrets(url: str) -> list[str]:
    """The secrets of ``url`` as its parser reads them (none for one it cannot parse)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [unquote(password)] if password else []
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    return found + [v for k, v in pairs if k.lower() in _SECRET_PARAMETERS and v]


def masked(text: str, url: str = "") -> str:
    """A driver's message (its first line) with no secret of ``url`` in it.

    Parsed, never searched as a substring: every URL in the message is shown as
    :func:`redacted` shows it (one it cannot parse not at all), every ``password=...``
    keyword loses its value, and a secret of ``url`` the driver quoted alone goes only
    where it stands as a whole word (a short password inside another word, ``ail`` in
    ``failed``, is left alone, so the message never points at it)."""
    text = _URL_IN_TEXT.sub(lambda m: redacted(m.group(0)), text)
    text = _SECRET_KEYWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    for secret in _secrets(url):
        text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", "***", text)
    return text.strip().splitlines()[0] if text.strip() else text
