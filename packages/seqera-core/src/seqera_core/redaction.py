"""Secrets kept out of what people read: URLs' passwords in messages, logs and settings."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["masked", "redacted"]

_SECRET_PARAMETERS = ("password", "passfile", "sslpassword", "token", "access_token")


def redacted(url: str) -> str:
    """``url`` with its password (in the userinfo or as ``?password=``) shown as ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "(a URL that cannot be parsed)"
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


def masked(text: str, url: str) -> str:
    """A driver's message with the URL's password never in it."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    secrets = [password] if password else []
    secrets += [v for k, v in parse_qsl(urlsplit(url).query) if k.lower() in _SECRET_PARAMETERS]
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text.strip().splitlines()[0] if text.strip() else text
