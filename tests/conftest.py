"""Shared test fixtures: paths to the test data. Kept light: nothing here imports torch or compiles the core."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: Repository root (the folder holding pyproject.toml).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: tests/data: positions and expected results in the INTERCHANGE.md format.
DATA_DIR = Path(__file__).resolve().parent / "data"
#: RULES.md section 7 worked cases as data (a copy of shared/cases/worked_cases.json).
WORKED_CASES_PATH = DATA_DIR / "worked_cases.json"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root, e.g. as the working directory of a subprocess."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The tests/data folder."""
    return DATA_DIR


@pytest.fixture(scope="session")
def worked_cases_path() -> Path:
    """Path of tests/data/worked_cases.json."""
    return WORKED_CASES_PATH


@pytest.fixture(scope="session")
def worked_cases() -> list[dict[str, Any]]:
    """The worked cases, each ``{"id", "note", "position", "legal", "illegal", ...}`` (see the file's "about")."""
    return json.loads(WORKED_CASES_PATH.read_text(encoding="utf-8"))["cases"]
