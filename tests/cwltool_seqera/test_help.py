"""``cwltool-seqera --help``: this command's own options first, then cwltool's (issue 29)."""

from __future__ import annotations

import re

import pytest

from cwltool_seqera import main
from cwltool_seqera._options import _parser


def test_help_lists_every_own_option_before_cwltools(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    ours = [o for a in _parser()._actions for o in a.option_strings]
    assert "--executor" in ours and len(ours) > 10
    cwltool_part = text.index("cwltool options:")
    for option in ours:  # each one shown, with a help line, before cwltool's part
        assert re.search(rf"^  {re.escape(option)}\b", text[:cwltool_part], re.M), option
    assert "--outdir" in text[cwltool_part:]  # cwltool's own help follows
    assert "--outdir" not in text[:cwltool_part]
