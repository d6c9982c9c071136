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
the selector matches that one name.

Every writer of Groovy in the project uses these two (the sidecar's ``config`` and per-task
generators, the report's snippets).
"""

from __future__ import annotations

__all__ = ["groovy_string", "name_selector"]

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# java.util.regex metacharacters outside a class; a backslash before any non-letter is a
# literal there (java.util.regex.Pattern: "Backslashes, escapes, and quoting").
_REGEX_META = frozenset("\\.[]{}()*+?^$|!")


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    if char.isprintable() and not 0xD800 <= ord(char) <= 0xDFFF:
        return char
    code = ord(char)
    if code > 0xFFFF:  # UTF-16: a surrogate pair, each escaped
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def groovy_string(text: str) -> str:
    """``text`` as a single-quoted Groovy string literal that evaluates to ``text``."""
    return "'" + "".join(_escaped(c) for c in text) + "'"


def name_selector(name: str) -> str:
    """A ``withName:`` selector (a Groovy literal) matching exactly the process ``name``."""
    return groovy_string("".join("\\" + c if c in _REGEX_META else c for c in name))
