"""The session tests: each test plugin file's trial import once a worker."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _trial_imports_once(trial_imports_once: None) -> None:
    """See tests/conftest.py's ``trial_imports_once``."""
