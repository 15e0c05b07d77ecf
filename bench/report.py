"""docs/benchmarks.md: each benchmark owns one ``## `` section and replaces it with every run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

REPORT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
PREAMBLE = "# Benchmarks\n\nNumbers measured on the project's 2-core machine.\n\n"


def write_section(section: Sequence[str]) -> Path:
    """Replace the section whose heading is ``section[0]`` where it stands (or append it), keeping the others."""
    heading = section[0]
    body = "\n".join(section).rstrip() + "\n"
    text = REPORT.read_text() if REPORT.exists() else PREAMBLE
    start = text.find(heading)
    if start == -1:
        text = text.rstrip() + "\n\n" + body
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + body + (text[end:] if end != -1 else "")
    REPORT.write_text(text)
    print(f"wrote {REPORT}")
    return REPORT
