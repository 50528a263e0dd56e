"""The features folder's requirements.txt: locked with the platform's, built into the layer
next to them, installed into the venv by `make setup` / `make dev`.

pip is replaced by a stand-in that answers as pip does (a resolution report for a dry run,
packages in the target folder for an install): what is checked is what scripts/layer.py asks
of pip and what it makes of the answers, without a package index.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from scripts import layer
from scripts.layer import LOCK_LINE, REQUIREMENTS, ROOT, Lock, Pin, lambda_python

APP_PIN = Pin("tinyapp-dep", "1.2.3", "a" * 64)


class FakePip:
    """Records each pip command and answers as pip would, with ``resolved`` as the resolution."""

    def __init__(self, resolved: list[Pin]) -> None:
        self.resolved = resolved
        self.commands: list[tuple[str, ...]] = []

    def __call__(self, *arguments: str) -> str:
        self.commands.append(arguments)
        verb, options = arguments[0], list(arguments)
        if verb == "install" and "--dry-run" in options:
            install = [
                {
                    "metadata": {"name": pin.name, "version": pin.version},
                    "download_info": {"archive_info": {"hashes": {"sha256": pin.sha256}}},
                }
                for pin in self.resolved
            ]
            return json.dumps({"install": install})
        if verb == "install":  # into the layer's staging folder: one package folder per locked line
            target = Path(options[options.index("-t") + 1])
            source = Path(options[-1])
            names = [m["name"] for m in map(LOCK_LINE.match, source.read_text().splitlines()) if m]
            names = names or [source.name.split("-")[0]]  # a wheel built from an sdist
            for name in names:
                (target / name.replace("-", "_")).mkdir(parents=True, exist_ok=True)
            return ""
        if verb in ("download", "wheel"):  # an sdist, then its wheel
            folder = Path(options[options.index("-d" if verb == "download" else "-w") + 1])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ("pkg.tar.gz" if verb == "download" else "amazon_dax_client-0-py3-none-any.whl")).write_text("")
            return ""
        raise AssertionError(f"unexpected pip command {arguments}")

    def dry_runs(self) -> list[tuple[str, ...]]:
        return [c for c in self.commands if c[0] == "install" and "--dry-run" in c]


@pytest.fixture
def app_requirements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A features folder's requirements.txt, and lock files of this test's own."""
    requirements = tmp_path / "mcp_tools" / "requirements.txt"
    requirements.parent.mkdir()
    requirements.write_text(f"# the app's own\n{APP_PIN.name}=={APP_PIN.version}\n")
    monkeypatch.setattr(layer, "FEATURES_REQUIREMENTS", requirements)
    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setattr(layer, "lock_path", lambda architecture: locks / f"requirements-{architecture}.lock")
    monkeypatch.setenv("LAMBDA_PYTHON", lambda_python())
    return requirements


def platform_pins() -> tuple[Pin, ...]:
    return Lock.read(ROOT / "layers" / "platform" / "requirements-x86_64.lock").pins


def test_make_lock_resolves_the_app_requirements_with_the_platforms_and_records_their_digest(
    app_requirements: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a features folder that names a dependency of its own, and pip resolving both files
    pip = FakePip([*platform_pins(), APP_PIN])
    monkeypatch.setattr(layer, "pip", pip)
    # When the locks are made
    layer.lock()
    # Then each architecture was resolved once from both requirements files together
    assert len(pip.dry_runs()) == len(layer.ARCHITECTURES)
    for command in pip.dry_runs():
        sources = [command[i + 1] for i, option in enumerate(command) if option == "-r"]
        assert sources == [str(REQUIREMENTS), str(app_requirements)]
    # And each lock pins the app's dependency with its hash, next to the platform's, and names
    # the digest of the app's requirements in its header
    for architecture in layer.ARCHITECTURES:
        text = layer.lock_path(architecture).read_text()
        locked = Lock.read(layer.lock_path(architecture))
        assert APP_PIN in locked.pins and {p.name for p in platform_pins()} < {p.name for p in locked.pins}
        assert f"# features requirements.txt sha256: {layer.features_digest()}" in text
        assert locked.stale_reason(architecture, lambda_python()) is None


def test_a_lock_made_before_the_app_requirements_changed_is_refused_by_the_build(
    app_requirements: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given locks made from the current requirements (the app's included)
    monkeypatch.setattr(layer, "pip", FakePip([*platform_pins(), APP_PIN]))
    layer.lock()
    # When the app's requirements change without `make lock`
    app_requirements.write_text(app_requirements.read_text() + "another-dep==2.0\n")
    # Then the lock tells why it is stale, and the build (make layer, synth's bundler) stops on it
    reason = Lock.read(layer.lock_path("x86_64")).stale_reason("x86_64", lambda_python())
    assert reason is not None and "mcp_tools/requirements.txt changed" in reason and "make lock" in reason
    with pytest.raises(SystemExit, match=r"requirements.txt changed since requirements-x86_64.lock.*make lock"):
        layer.build("x86_64", tmp_path / "out")
    # And so does a lock made with app requirements once the folder has none any more
    app_requirements.unlink()
    with pytest.raises(SystemExit, match="make lock"):
        layer.build("x86_64", tmp_path / "out")


def test_the_build_installs_the_app_dependencies_hash_checked_next_to_the_platforms(
    app_requirements: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a current lock with the app's dependency
    pip = FakePip([*platform_pins(), APP_PIN])
    monkeypatch.setattr(layer, "pip", pip)
    layer.lock()
    # When the layer is built
    output = tmp_path / "out"
    layer.build("x86_64", output)
    # Then one hash-checked install put the app's dependency where the platform's are, beside
    # mcp_platform (/opt/python on Lambda)
    (binary,) = [c for c in pip.commands if c[0] == "install" and "--require-hashes" in c]
    assert "--no-deps" in binary
    installed = {path.name for path in (output / "python").iterdir()}
    assert {"tinyapp_dep", "uvicorn", "mcp_platform"} <= installed


def test_without_an_app_requirements_file_the_locks_are_the_platforms_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a features folder with no requirements.txt
    monkeypatch.setattr(layer, "FEATURES_REQUIREMENTS", tmp_path / "none" / "requirements.txt")
    monkeypatch.setattr(layer, "lock_path", lambda architecture: tmp_path / f"requirements-{architecture}.lock")
    pip = FakePip(list(platform_pins()))
    monkeypatch.setattr(layer, "pip", pip)
    # When the locks are made / Then only the platform's requirements are resolved, and the lock
    # has no features line (the committed locks are of this kind while the app needs nothing)
    layer.lock()
    for command in pip.dry_runs():
        assert [command[i + 1] for i, option in enumerate(command) if option == "-r"] == [str(REQUIREMENTS)]
    assert "features requirements" not in layer.lock_path("x86_64").read_text()
    assert Lock.read(layer.lock_path("x86_64")).features_sha256 == ""


def test_synth_bundles_the_layer_again_when_the_app_requirements_change_and_stops_on_a_stale_lock(
    app_requirements: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from stacks.shared_layer import LayerBundler, bundling_environment

    # Given a current lock with the app's dependency
    monkeypatch.setattr(layer, "pip", FakePip([*platform_pins(), APP_PIN]))
    layer.lock()
    python = lambda_python()
    before = bundling_environment("x86_64", python)
    # When the app's requirements change
    app_requirements.write_text(app_requirements.read_text() + "another-dep==2.0\n")
    # Then the layer asset's hash changes (its bundling environment does: CDK bundles it again,
    # even where an earlier bundle of the same lock is in cdk.out), and the bundler stops on the
    # stale lock before reusing build/layer-<arch> or building
    assert bundling_environment("x86_64", python) != before
    with pytest.raises(RuntimeError, match=r"requirements\.txt changed since .*: make lock"):
        LayerBundler("x86_64", python).try_bundle(str(tmp_path / "bundle"))
    assert not (tmp_path / "bundle").exists()
    # And with no requirements of the app's, the environment (and the asset hash) is the
    # platform's alone, as before the app could have any
    app_requirements.unlink()
    assert bundling_environment("x86_64", python) == {"LAYER_ARCH": "x86_64", "LAYER_PYTHON": python}


MakeDryRun = Callable[[Path], str]


@pytest.fixture
def make_setup_dry_run() -> MakeDryRun:
    def run(features: Path) -> str:
        done = subprocess.run(
            # -B: every recipe as if out of date, whatever this machine's stamps say
            ["make", "-n", "-B", "setup", f"MCP_FEATURES_DIR={features}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


def test_make_setup_installs_the_served_features_folder_requirements_into_the_venv(
    tmp_path: Path, make_setup_dry_run: MakeDryRun
) -> None:
    # Given the features folder `make dev` serves (MCP_FEATURES_DIR) with a requirements.txt
    features = tmp_path / "features"
    features.mkdir()
    (features / "__init__.py").write_text("")
    (features / "requirements.txt").write_text("tinyapp-dep==1.2.3\n")
    # Then `make setup` (which `make dev` and `make test` run first) installs it into the venv
    planned = make_setup_dry_run(features)
    assert f".venv/bin/python -m pip install -q -r {features / 'requirements.txt'}" in planned
    # And a folder without one installs nothing of its own
    (features / "requirements.txt").unlink()
    installs = [line for line in make_setup_dry_run(features).splitlines() if "pip install" in line]
    assert installs and not any(str(features) in line for line in installs)
