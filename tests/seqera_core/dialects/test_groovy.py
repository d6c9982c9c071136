"""Names written into Groovy (Nextflow configs) stay the names: checked by Debian's Groovy.

One Groovy run reads every literal back and matches every selector with
``java.util.regex.Pattern.matches``, as Nextflow's ``ProcessConfig.matchesSelector`` does,
and parses the whole generated config: a newline or a quote in a process name cannot
end a string or a line early.
"""

from __future__ import annotations

from pathlib import Path

from seqera_core.dialects.groovy import groovy_string, name_selector
from seqera_core.report import Advice
from seqera_core.report._snippets import nextflow_config
from tests.groovy import run_groovy, units

HOSTILE = [
    "ALIGN",
    "NFCORE_RNASEQ:RNASEQ:FASTQC",
    "a'b",
    "line\nbreak'}\nprocess { cpus = 999 }//",
    "back\\slash\\",
    "tab\tand\rcarriage",
    "$dollar ${'x'} \"double\"",
    "regex.*+?^$|()[]{}",
    "!negated",
    "unicode é ✓ \u2028 \U0001f600",
    "nul\x00bell\x07",
]


def checks(names: list[str], config: Path) -> str:
    """A Groovy script: each name read back (its UTF-16 units printed), each selector
    matching it as Nextflow matches one, then the config at ``config`` parsed."""
    lines = [
        f"assert java.util.regex.Pattern.matches({name_selector(n)}, {groovy_string(n)})\n"
        # the ASCII-only forms (the sidecar's per-task config) are the same string and regex
        f"assert {groovy_string(n, ascii_only=True)} == {groovy_string(n)}\n"
        f"assert java.util.regex.Pattern.matches({name_selector(n, ascii_only=True)}, "
        f"{groovy_string(n)})\n"
        f"println({groovy_string(n)}.chars().collect {{ Integer.toHexString(it) }}.join(','))"
        for n in names
    ]
    lines.append(f"new GroovyShell().parse(new File({groovy_string(str(config))}).text)")
    lines.append("println('parsed')")
    return "\n".join(lines) + "\n"


def test_names_survive_as_groovy_strings_and_selectors(tmp_path: Path) -> None:
    advice = [Advice(process=name, cpus=2, memory=2**30, time=3600, sized=1, saved_memory=0,
                     saved_cpus=0, too_small=0) for name in HOSTILE]  # fmt: skip
    config = nextflow_config(advice)
    assert config.count("\n") == len(HOSTILE) + 4  # one line per process, nothing more
    (tmp_path / "generated.config").write_text(config, encoding="utf-8")
    lines = run_groovy(checks(HOSTILE, tmp_path / "generated.config"), tmp_path)
    assert lines == [units(n) for n in HOSTILE] + ["parsed"]


def test_ascii_only_escapes_everything_past_printable_ascii() -> None:
    for name in HOSTILE:
        assert groovy_string(name, ascii_only=True).isascii()
        assert name_selector(name, ascii_only=True).isascii()
    assert groovy_string("é ✓", ascii_only=True) == "'\\u00e9 \\u2713'"
    assert groovy_string("é ✓") == "'é ✓'"


def test_a_selector_matches_only_its_own_name() -> None:
    assert name_selector("ALIGN") == "'ALIGN'"
    assert name_selector("A|B") == "'A\\\\|B'"
    assert groovy_string("it's\n") == "'it\\'s\\n'"
