"""`lint`'s text output when it goes to a pipe or a file: every finding on a line of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olares_pack.cli import main

CHARTS = Path(__file__).parent / "data" / "charts"


def test_piped_text_holds_each_finding_whole_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(CHARTS)
    main(["lint", "--format", "json", folder])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert findings, "the hand-written charts have findings"
    main(["lint", folder])
    lines = capsys.readouterr().out.splitlines()
    for f in findings:
        label = f["rule"] + (" (policy)" if f["class"] == "policy" else "")
        row = [line for line in lines
               if line.split()[:2] == [f["severity"], f["rule"]] and f" {label} " in line and line.endswith(f["message"])]
        assert row, f"no line for {f['rule']}: {f['message']}"
        if f.get("hint"):
            following = lines[lines.index(row[0]) + 1]
            assert following.strip() == f"hint: {f['hint']}"
