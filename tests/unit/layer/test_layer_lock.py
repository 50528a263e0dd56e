"""The layer's lock files agree with its requirements (the platform's and the features folder's)
and the runtime's Python (make lock)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from scripts.layer import (
    ARCHITECTURES,
    REQUIREMENTS,
    ROOT,
    Lock,
    features_digest,
    features_requirements,
    lock_path,
    normalized,
)

PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)(?:\[[^\]]*\])?==(?P<version>\S+)")


def direct_pins() -> dict[str, str]:
    pins = {}
    for line in (REQUIREMENTS.read_text() + "\n" + features_requirements()).splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[normalized(match["name"])] = match["version"]
    return pins


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_lock_was_made_from_the_current_requirements_for_the_runtime_python(architecture: str) -> None:
    # Given the lock of one architecture
    locked = Lock.read(lock_path(architecture))
    # Then it was resolved from exactly today's requirements.txt, for the Python of .python-version
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    assert locked.requirements_sha256 == digest, (
        f"requirements.txt changed since {lock_path(architecture).name}: make lock"
    )
    assert locked.python == (ROOT / ".python-version").read_text().strip(), "the runtime's Python changed: make lock"
    # And from today's features folder requirements.txt (none: no digest), as the build checks
    assert locked.features_sha256 == features_digest(), "the features' requirements.txt changed: make lock"
    assert locked.stale_reason(architecture, locked.python) is None
    # And every direct requirement is in it at its pinned version, every entry with a hash
    versions = {pin.name: pin.version for pin in locked.pins}
    for name, version in direct_pins().items():
        assert versions.get(name) == version, f"{name}=={version} is locked as {versions.get(name)}: make lock"
    assert len(locked.pins) > len(direct_pins())  # the transitive tree too, not only the direct pins
    assert all(len(pin.sha256) == 64 for pin in locked.pins)


def test_a_lock_from_other_requirements_is_told_apart(tmp_path: Path) -> None:
    # Given a lock whose header names another requirements digest / Then the check above would fail
    text = lock_path("x86_64").read_text()
    stale = tmp_path / "stale.lock"
    stale.write_text(re.sub(r"(requirements.txt sha256: )\w+", r"\g<1>" + "0" * 64, text))
    assert Lock.read(stale).requirements_sha256 != hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    assert Lock.read(stale).pins == Lock.read(lock_path("x86_64")).pins
