"""Fixtures shared by every test package, and ``--without-app``.

``pytest --without-app`` runs the platform's tests as if the features folder
(functions/endpoint/mcp_tools, the starter app) were empty: ``import mcp_tools`` finds an empty
package, ``python -m local`` serves an empty folder unless a test names its own, and the tests of
the app and of its documentation (tests/app, tests/docs: the pages' examples extend the starter
app) are not collected. The platform's tests serve their own tools (tests/support/platform_tools),
so they pass either way.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.aws import set_fake_aws_env
from tests.support.features import hide_the_app

APP_TESTS = tuple(Path(__file__).resolve().parent / name for name in ("app", "docs"))
"""The tests of the starter app and of the documentation, which extends it."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--without-app",
        action="store_true",
        default=False,
        help="run the platform's tests as if functions/endpoint/mcp_tools were empty; leaves tests/app, tests/docs out",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--without-app"):
        scratch = Path(tempfile.mkdtemp(prefix="without-app-"))
        config.add_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))
        hide_the_app(scratch)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption("--without-app") and any(
        collection_path == tests or tests in collection_path.parents for tests in APP_TESTS
    ):
        return True
    return None  # no opinion: the other rules decide


# Property tests assert properties, not durations: an example's run time on a shared CI runner
# says nothing about the code (performance is measured by `make bench`).
settings.register_profile("platform", deadline=None)
settings.load_profile("platform")


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake AWS credentials, only inside the test that asks for them."""
    set_fake_aws_env(monkeypatch)
