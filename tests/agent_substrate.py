"""The Agent Substrate corpus (../shared/corpus/agent-substrate), read in place: its CRDs and its instances with
the upstream template placeholders resolved. Tests using it mark themselves with :data:`needs_corpus`, so they
skip cleanly where ../shared is absent; nothing of the corpus is ever copied into the repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import SHARED

CORPUS = SHARED / "corpus" / "agent-substrate"
CRDS = ("actortemplates", "workerpools", "sandboxconfigs")  # plurals of the three ate.dev CRDs
DIGEST = "@sha256:" + "0123456789abcdef" * 4
needs_corpus = pytest.mark.skipif(not (CORPUS / "crds").is_dir(),
                                  reason=f"Agent Substrate corpus not found at {CORPUS}")


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crd_files() -> list[Path]:
    return sorted((CORPUS / "crds").glob("ate.dev_*.yaml"))


def substitute(text: str) -> str:
    """Resolve the corpus's template placeholders the way its upstream build does."""
    text = re.sub(r"ko://[^\s\"']+", lambda m: "registry.example/" + m.group(0)[5:].replace("/", "-") + DIGEST, text)
    text = re.sub(r"\$\{[A-Z0-9_]*SHA256\}", "5" * 64, text)
    return re.sub(r"\$\{[A-Z0-9_]+\}", "placeholder", text)


def documents(name: str) -> list[dict[str, Any]]:
    """The objects of ``instances/<name>``, placeholders resolved."""
    return [d for d in yaml.safe_load_all(substitute((CORPUS / "instances" / name).read_text())) if d]


def instances(kind: str) -> list[dict[str, Any]]:
    """Every object of ``kind`` in the corpus's instances, placeholders resolved."""
    return [doc for path in sorted((CORPUS / "instances").glob("*.yaml")) for doc in documents(path.name)
            if doc.get("kind") == kind]
