"""Hostile inputs for the command lines' property tests, and one way to judge an answer.

Every command line of the project must answer any input with exit 0 or 2 (2 naming the
flag or field and the value), never a traceback (issue 20). These strategies produce
what a careless or hostile user can type or leave in a file: huge and 5,000-digit
numbers, NaN and infinities, negative and zero values, unicode, lone surrogates (how
Python shows argv bytes that are not UTF-8), empty text, deep nesting, binary garbage.
NUL never reaches argv or the environment (the kernel cannot pass it), so it only
appears in file contents.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "BOUNDARIES",
    "SETTINGS",
    "Answer",
    "arg_text",
    "documents",
    "file_contents",
    "huge_digits",
    "invoke",
    "numbers_text",
    "place",
    "scoped",
]

# Moderate example counts: each session's property tests stay within a few seconds. Under
# CI the examples are the same on every run (a red CI must be reproducible from its log);
# on a developer's machine each run explores new ones.
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_HUGE = "9" * 5000
_SPECIAL = [
    "", " ", "0", "-0", "-1", "1", "2", "0.5", "1e999", "-1e999", "1e-400", "nan", "NaN",
    "inf", "-inf", "Infinity", "1_000", "0x10", "1e3", "١٢", "½", "²", _HUGE, "1" * 400,
    "-" + _HUGE, _HUGE + ".5", "1." + _HUGE, "4 GB", "4GiB", "4G", "1h", "1h30m", "01:30:00",
    "2-00:00:00", "99:99:99", "a100:2", ":2", "a:b:3", "=", "a=b", "=b", "a==b", "'1'", '"1"',
    "%s", "{}", "[]", "null", "true", "-", "é", "\u202e", "🙂", "\U0010ffff", "\t", "\n",
    "\udcff", "a\udc80b", "x" * 3000, "../../etc/passwd", "/", ".", _HUGE + "GB",
    _HUGE + " GiB", _HUGE + "h", _HUGE + ":00:00", "1" * 400 + "GiB", "1" * 400 + "h",
    "1e300 days", "1e300 GB", "9" * 30 + "TiB",
]  # fmt: skip
BOUNDARIES = ["1" * 400, "9" * 5000, "1e999", "nan", "-1", "0", "\udcff", ""]
"""Values each input meets for certain (hypothesis.example), whatever else is drawn."""
_UNITS = ["", " ", "B", "KB", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "G", "gb",
          "s", "m", "h", "d", "ms", "%", " GB", "e", "e999"]  # fmt: skip
# Any character a process can receive in argv or its environment: no NUL, and lone
# surrogates only as argv's surrogateescape bytes (U+DC80..U+DCFF).
_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00") | st.sampled_from(
    ["\udc80", "\udcff", "\udce9"]
)

# 19 to 6,000 digits: past an int64, past a float, past int()'s 4,300-digit limit
_LENGTHS = [19, 20, 40, 309, 400, 1000, 4300, 4301, 5000]  # the limits and either side
huge_digits = st.tuples(st.integers(1, 9), st.sampled_from(_LENGTHS)).map(
    lambda t: str(t[0]) * t[1]
)
numbers_text = st.one_of(
    st.integers().map(str),
    huge_digits,
    st.floats().map(repr),
    st.floats().map(str),
    st.decimals(allow_nan=True).map(str),
).flatmap(lambda n: st.sampled_from(_UNITS).map(lambda unit: n + unit))
"""Numbers as text, with a unit (or not): huge, tiny, NaN, inf, negative."""

arg_text = st.one_of(
    st.sampled_from(_SPECIAL),
    huge_digits,  # bare too: an int-typed option takes them
    numbers_text,
    st.text(_CHARS, max_size=40),
)
"""One hostile command-line or environment value."""

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**18, max_value=10**400),
    st.floats(),
    st.text(_CHARS, max_size=20),
    st.sampled_from(_SPECIAL),
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(scalars, inner, max_size=4),
    max_leaves=25,
)
"""Any decoded YAML document (keys may be any scalar)."""


def _yaml(document: Any) -> bytes:
    try:
        return yaml.safe_dump(document, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, ValueError):
        return repr(document).encode("utf-8", "surrogatepass")


def _json(document: Any) -> bytes:
    try:
        return json.dumps(document).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return repr(document).encode("utf-8", "surrogatepass")


_FIXED_FILES = [
    b"",
    b"\x00",
    b"a: \x00\n",
    b"\xff\xfe\x00garbage\x80",
    b"[" * 100_000 + b"]" * 100_000,
    b"a: " + b"{a: " * 3000 + b"1" + b"}" * 3000,
    b"- " * 2000 + b"1",
    b"&a [*a, *a]",
    b"a: &x [1]\nb: *x\n",
    b"{" * 50_000,
    b'"' + b"\\" * 999,
    b"!!python/object:os.system {}",
    b"a: !!binary AAAA\n",
    b"a: 2001-12-14t21:59:43.10-05:00\nb: 1e999\n",
    b"a: " + _HUGE.encode() + b"\n",
    b"[" + _HUGE.encode() + b"]",
    b"a: 1\na: 2\n",
    b"\xef\xbb\xbfa: 1\n",
    b"%YAML 9.9\n---\na: 1\n",
    b"---\na: 1\n---\nb: 2\n",
]


def file_contents(shaped: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[bytes]:
    """Bytes of a file a command reads: garbage, deep nesting, huge numbers, NUL, and
    any document (or ``shaped``, documents close to a valid one) as YAML and as JSON."""
    docs = documents if shaped is None else (shaped | documents)
    return st.one_of(
        st.sampled_from(_FIXED_FILES),
        st.binary(max_size=200),
        docs.map(_yaml),
        docs.map(_json),
    )


def place(folder: Path, name: str, contents: bytes | None) -> str:
    """Write ``contents`` at ``folder/name`` (``None``: a directory there); its path."""
    path = folder / name
    if contents is None:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.write_bytes(contents)
    return str(path)


@contextlib.contextmanager
def scoped(environ: Mapping[str, str], cwd: Path) -> Iterator[None]:
    """Run with exactly ``environ`` as the environment (plus PATH) in ``cwd``; restored after."""
    saved, here = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update({"PATH": saved.get("PATH", "/usr/bin:/bin"), **environ})
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


class _Stream(io.StringIO):
    """A UTF-8 stream as a process has: stdout strict (a lone surrogate printed there is
    UnicodeEncodeError, as on a real UTF-8 terminal), stderr ``backslashreplace``."""

    encoding = "utf-8"  # cwltool's main reads sys.stdout.encoding

    def __init__(self, errors: str) -> None:
        super().__init__()
        self._errors = errors

    def reconfigure(self, errors: str) -> None:
        self._errors = errors

    def write(self, text: str) -> int:
        text.encode("utf-8", self._errors)
        return super().write(text)


class Answer:
    """A command's exit status and what it wrote."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"Answer(code={self.code}, err={self.err[-2000:]!r}, out={self.out[-500:]!r})"

    def check(self, names: Sequence[str] = (), value: str | None = None) -> None:
        """Exit 0 or 2 without a traceback. A 2 for bad input names one of ``names`` (the
        flag, or the field it becomes) and ``value`` (its first characters, as written or
        as ``repr`` shows them) on stderr; a 2 with no error on stderr is a report on
        stdout (a job no queue can run) and says ``error:``."""
        assert self.code in (0, 2), self
        assert "Traceback" not in self.err, self
        if self.code != 2 or not names:
            return
        if "error:" not in self.err and "error:" in self.out:
            return  # the report of a job no queue can run
        assert any(name in self.err for name in names), (names, self)
        written = None if value is None else value.strip().strip("'\"")
        # A limit (a queue's, the machine's) quotes the value in canonical units instead.
        if written and "expected at most" not in self.err:  # engines strip quotes too
            head = written[:10]
            shown = repr(written)[1:-1][:10]  # without repr's closing quote
            # KEY=VALUE flags (--ecs, --label) name the key as the field and quote the value
            after = written.partition("=")[2][:10]
            assert head in self.err or shown in self.err or (after and after in self.err), (
                value[:40],
                self,
            )


def invoke(main: Callable[[Sequence[str]], int], argv: Sequence[str]) -> Answer:
    """Run ``main(argv)`` in this process: its exit status (SystemExit's too) and output.

    Any exception is the failure these tests look for, so it is let through."""
    out, err = _Stream("strict"), _Stream("backslashreplace")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse: 2 for a bad flag, 0 for --help
            code = exc.code if isinstance(exc.code, int) else 1
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
    return Answer(code, out.getvalue(), err.getvalue())
