"""Shared fixtures: the book is built once per test session (slow) for the build and browser tests."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """``jupyter-book build --warningiserror`` into a temporary folder; returns (result, html folder)."""
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run(
        [str(Path(sys.executable).with_name("jupyter-book")), "build", str(ROOT), "--path-output", str(out),
         "--warningiserror", "--keep-going"],
        capture_output=True, text=True, timeout=900)
    return result, out / "_build" / "html"
