"""A missing service skips a test with the fix, except under CI, where it fails it."""

from __future__ import annotations

import pytest

from cq2a.testing import services as product
from tests import services


def no_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(product, "glob", lambda pattern: [])
    monkeypatch.setattr(product.shutil, "which", lambda name: None)


def test_missing_postgres_skips_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    no_postgres(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install postgresql"):
        services.running_postgres().__enter__()


def test_missing_postgres_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    no_postgres(monkeypatch)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        services.running_postgres().__enter__()
