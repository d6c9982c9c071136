"""Text written into a Groovy source (a Nextflow config) as a literal it cannot break out of.

A process name reaches a generated config from a history any weblog client can write:
a newline or a quote in it must stay inside its string. :func:`groovy_string` writes a
single-quoted Groovy string (no ``$`` interpolation: Groovy's ``'...'`` is a plain
``java.lang.String``), escaping the backslash, the quote and every character that is not
printable as ``\\uXXXX`` (UTF-16, as the Java lexer reads it; a character past U+FFFF as
its surrogate pair). :func:`name_selector` is that, for a ``withName:`` selector, which
Nextflow matches as a Java regular expression over the whole name (``!`` in front negates;
``ProcessConfig.matchesSelector``, nextflow ``modules/nextflow/src/main/groovy/nextflow/
script/ProcessConfig.groovy``): the regular expression's metacharacters are escaped, so
the selector matches that one name. With ``ascii_only`` every character outside printable
ASCII is escaped too: the file is then plain ASCII, the same whatever charset its reader
assumes (the sidecar's per-task config is written so).

Every writer of Groovy in the project uses these two (the sidecar's ``config`` and per-task
generators, the report's snippets).
"""

from __future__ import annotations

__all__ = ["groovy_string", "name_selector"]

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# java.util.regex metacharacters outside a class; a backslash before any non-letter is a
# literal there (java.util.regex.Pattern: "Backslashes, escapes, and quoting").
_REGEX_META = frozenset("\\.[]{}()*+?^$|!")


def _plain(char: str, ascii_only: bool) -> bool:
    if ascii_only:
        return " " <= char <= "~"
    return char.isprintable() and not 0xD800 <= ord(char) <= 0xDFFF


def _escaped(char: str, ascii_only: bool) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    if _plain(char, ascii_only):
        return char
    code = ord(char)
    if code > 0xFFFF:  # UTF-16: a surrogate pair, each escaped
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def groovy_string(text: str, *, ascii_only: bool = False) -> str:
    """``text`` as a single-quoted Groovy string literal that evaluates to ``text``
    (with ``ascii_only``, written in printable ASCII alone)."""
    return "'" + "".join(_escaped(c, ascii_only) for c in text) + "'"


def name_selector(name: str, *, ascii_only: bool = False) -> str:
    """A ``withName:`` selector (a Groovy literal) matching exactly the process ``name``."""
    pattern = "".join("\\" + c if c in _REGEX_META else c for c in name)
    return groovy_string(pattern, ascii_only=ascii_only)
