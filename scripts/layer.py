"""Builds the shared Lambda layer from its hashed lock file, and regenerates the lock files.

    python scripts/layer.py build <arm64|x86_64> [output dir]   (make layer; synth's bundler)
    python scripts/layer.py lock                                  (make lock)

No Docker: pip installs wheels for the Lambda platform (``--platform manylinux...
--only-binary=:all:``) instead of compiling inside an Amazon Linux image.

Reproducible: ``layers/platform/requirements.txt`` names what the layer needs; ``make lock``
resolves its whole tree once per architecture for the runtime's Python into
``requirements-<arch>.lock``, one ``name==version --hash=sha256:...`` line each, and the build
installs exactly that with ``--require-hashes --no-deps``. The same commit therefore ships the
same files, and the layer's asset hash (the sources, locks included) changes when the lock does.

The app's dependencies: the features folder may carry a ``requirements.txt`` (third-party
packages its tool modules import; ``functions/endpoint/mcp_tools/requirements.txt``). ``make
lock`` resolves it together with the platform's (one tree, so a conflict between them fails the
lock, not the start) into the same lock files, whose header records its digest; the build
installs it with the rest, next to the platform's dependencies, and refuses a lock made before
either requirements file last changed ("make lock"). Like the platform's, the app's
dependencies must have wheels for manylinux.

Output: ``<output dir>/python/{dependencies, mcp_platform}`` (default build/layer-<arch>), the
layout Lambda mounts under /opt/python, compiled to bytecode for the runtime's Python, and
``<output dir>/requirements.sha256``, which tells the CDK layer construct
(stacks/shared_layer.py) whether these dependencies are still current.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "layers" / "platform"
REQUIREMENTS = LAYER / "requirements.txt"
# The app's own dependencies (optional): the deployed features folder's requirements.txt.
FEATURES_REQUIREMENTS = ROOT / "functions" / "endpoint" / "mcp_tools" / "requirements.txt"
ARCHITECTURES = {"arm64": "aarch64", "x86_64": "x86_64"}
STAMP = "requirements.sha256"
# Published as an sdist only, which --only-binary refuses: the lock pins the sdist's hash, and the
# build turns the verified sdist into a pure-Python wheel (it has no compiled code).
SDIST_ONLY = frozenset({"amazon-dax-client"})
# The Lambda runtime ships boto3 with botocore and its transport dependencies; copies in
# /opt/python would shadow them (amazon-dax-client pulls botocore in) and add ~40 MB to the layer.
# six and jmespath stay: they are direct dependencies of the layer's own packages.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "urllib3", "dateutil", "python_dateutil")
LOCK_LINE = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>\S+) --hash=sha256:(?P<sha256>[0-9a-f]{64})")


def lambda_python() -> str:
    """The runtime's Python (major.minor): LAMBDA_PYTHON (the Makefile exports it) or .python-version."""
    return os.environ.get("LAMBDA_PYTHON") or (ROOT / ".python-version").read_text().strip()


def compile_bytecode(site: Path, python: str) -> None:
    """Compile every module under ``site`` for the runtime's Python.

    Lambda mounts a layer read-only, so the interpreter cannot cache what it compiles: a layer
    without bytecode compiles each module it imports on every cold start. The bytecode is
    ``unchecked-hash``: deploy tooling rewrites file times (asset staging, the zip's two-second
    resolution), which would make timestamp-checked bytecode stale on arrival; it is never
    checked against the source, so it must come from these very files (the build and the
    bundler compile after the last copy).
    """
    subprocess.run(  # noqa: S603 - a fixed module of the runtime's interpreter
        [interpreter(python), "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(site)],
        check=True,
    )


def interpreter(python: str) -> str:
    """A CPython of the runtime's version (major.minor): this one, or the one find_python.sh finds."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
        return sys.executable
    found = subprocess.run(  # noqa: S603 - fixed script
        ["/bin/bash", str(ROOT / "scripts" / "find_python.sh"), python], capture_output=True, text=True
    )
    if found.returncode != 0:
        raise SystemExit(f"the layer's bytecode needs CPython {python}: {found.stderr.strip()}")
    return found.stdout.strip()


def lock_path(architecture: str) -> Path:
    return LAYER / f"requirements-{architecture}.lock"


def stamp_for(architecture: str, python: str) -> str:
    """What a build from the current lock writes next to its output (compared by the bundler)."""
    digest = hashlib.sha256(lock_path(architecture).read_bytes()).hexdigest()
    return f"{digest} python{python}"


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def sha256_of_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def features_requirements() -> str:
    """The features folder's requirements.txt, or "" when it has none."""
    return FEATURES_REQUIREMENTS.read_text() if FEATURES_REQUIREMENTS.is_file() else ""


def features_digest() -> str:
    """What a current lock records for the features' requirements ("" when there are none)."""
    text = features_requirements()
    return sha256_of_text(text) if text else ""


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    sha256: str

    def line(self) -> str:
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


@dataclass(frozen=True)
class Lock:
    requirements_sha256: str
    python: str
    pins: tuple[Pin, ...]
    # The features folder's requirements.txt it was resolved with; "" (no header line): none.
    features_sha256: str = ""

    @classmethod
    def read(cls, path: Path) -> Lock:
        text = path.read_text()
        keys = "requirements.txt sha256|features requirements.txt sha256|python"
        header = dict(re.findall(rf"^# ({keys}): (\S+)$", text, re.MULTILINE))
        pins = tuple(Pin(**m.groupdict()) for m in map(LOCK_LINE.match, text.splitlines()) if m)
        features = header.get("features requirements.txt sha256", "")
        return cls(header.get("requirements.txt sha256", ""), header.get("python", ""), pins, features)

    def render(self, architecture: str) -> str:
        features = [f"# features requirements.txt sha256: {self.features_sha256}"] if self.features_sha256 else []
        lines = [
            "# Generated by `make lock` (scripts/layer.py) from requirements.txt; do not edit.",
            f"# requirements.txt sha256: {self.requirements_sha256}",
            *features,
            f"# python: {self.python}",
            f"# platform: manylinux {ARCHITECTURES[architecture]}",
            *(pin.line() for pin in sorted(self.pins, key=lambda p: normalized(p.name))),
        ]
        return "\n".join(lines) + "\n"

    def stale_reason(self, architecture: str, python: str) -> str | None:
        """Why this lock is not the one ``make lock`` would write today, or None."""
        name = lock_path(architecture).name
        if self.requirements_sha256 != sha256_of_text(REQUIREMENTS.read_text()):
            return f"{shown(REQUIREMENTS)} changed since {name} was made: make lock"
        if self.features_sha256 != features_digest():
            return f"{shown(FEATURES_REQUIREMENTS)} changed since {name} was made: make lock"
        if self.python != python:
            return f"{name} is for Python {self.python}, the runtime is {python}: make lock"
        return None


def stale_lock(architecture: str, python: str) -> str | None:
    """What changed since the architecture's lock was made, or None: a layer built from a stale
    lock would lack (or carry stale) dependencies, and the deployed functions fail their imports."""
    return Lock.read(lock_path(architecture)).stale_reason(architecture, python)


def platform_options(architecture: str, python: str) -> list[str]:
    machine = ARCHITECTURES[architecture]
    return [
        *("--platform", f"manylinux2014_{machine}", "--platform", f"manylinux_2_28_{machine}"),
        *("--implementation", "cp", "--python-version", python, "--only-binary=:all:"),
    ]


def pip(*arguments: str) -> str:
    command = [sys.executable, "-m", "pip", *arguments]
    env = {**os.environ, "PIP_NO_COLOR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=env)  # noqa: S603 - fixed argv
    noise = ("WARNING: Location", "WARNING: Target directory")
    for line in done.stderr.splitlines():
        if not line.startswith(noise):
            print(line, file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"pip {arguments[0]} failed (exit {done.returncode})")
    return done.stdout


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel_from_sdist(requirement: str, workdir: Path) -> tuple[Path, Path]:
    """Downloads the sdist (hash-checked when ``requirement`` carries one) and builds its wheel."""
    sdists, wheels = workdir / "sdist", workdir / "wheels"
    workdir.mkdir(parents=True, exist_ok=True)
    spec = workdir / "sdist-requirement.txt"
    spec.write_text(requirement + "\n")
    checked = ["--require-hashes"] if "--hash=" in requirement else []
    pip("download", "-q", "--no-deps", "--no-binary=:all:", *checked, "-d", str(sdists), "-r", str(spec))
    (sdist,) = sdists.iterdir()
    # The venv's setuptools builds it: no isolated build environment with unpinned tools.
    pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(sdist))
    (wheel,) = wheels.iterdir()
    return sdist, wheel


def lock() -> None:
    python = lambda_python()
    requirements = REQUIREMENTS.read_text()
    app_requirements = features_requirements()
    # One resolution for both: the app's and the platform's dependencies share one layer.
    sources = ["-r", str(REQUIREMENTS), *(["-r", str(FEATURES_REQUIREMENTS)] if app_requirements else [])]
    sdist_only = [
        line.strip()
        for line in (requirements + "\n" + app_requirements).splitlines()
        if normalized(line.split("==")[0].strip()) in SDIST_ONLY
    ]
    with tempfile.TemporaryDirectory(prefix="layer-lock-") as scratch:
        work = Path(scratch)
        sdist_hashes: dict[str, str] = {}
        for requirement in sdist_only:
            sdist, wheel = wheel_from_sdist(requirement, work / normalized(requirement.split("==")[0]))
            sdist_hashes[normalized(requirement.split("==")[0])] = sha256_of(sdist)
            shutil.copy(wheel, work)
        for architecture in ARCHITECTURES:
            report = pip(
                "install", "-q", "--dry-run", "--ignore-installed", "--report", "-",
                *platform_options(architecture, python),
                "--find-links", str(work), "--target", str(work / "target"), *sources,
            )  # fmt: skip
            pins = []
            for item in json.loads(report)["install"]:
                name, version = item["metadata"]["name"], item["metadata"]["version"]
                sha = sdist_hashes.get(normalized(name)) or item["download_info"]["archive_info"]["hashes"]["sha256"]
                pins.append(Pin(normalized(name), version, sha))
            locked = Lock(sha256_of_text(requirements), python, tuple(pins), features_digest())
            lock_path(architecture).write_text(locked.render(architecture))
            print(f"{shown(lock_path(architecture))}: {len(pins)} packages for Python {python}")


def build(architecture: str, output: Path) -> None:
    if architecture not in ARCHITECTURES:
        raise SystemExit(f"layer.py: architecture must be one of {', '.join(ARCHITECTURES)}, got {architecture!r}")
    python = lambda_python()
    stale = stale_lock(architecture, python)
    if stale is not None:
        raise SystemExit(stale)
    locked = Lock.read(lock_path(architecture))
    with tempfile.TemporaryDirectory(prefix="layer-build-") as scratch:
        work = Path(scratch)
        stage = work / "python"
        binary = [pin for pin in locked.pins if pin.name not in SDIST_ONLY]
        (work / "binary.lock").write_text("".join(pin.line() + "\n" for pin in binary))
        pip(
            "install", "-q", "--no-compile", "--no-deps", "--require-hashes",
            *platform_options(architecture, python), "-t", str(stage), "-r", str(work / "binary.lock"),
        )  # fmt: skip
        for pin in locked.pins:
            if pin.name in SDIST_ONLY:
                _sdist, wheel = wheel_from_sdist(pin.line(), work / pin.name)
                pip("install", "-q", "--no-compile", "--no-deps", "--no-index", "-t", str(stage), str(wheel))
        for package in RUNTIME_PROVIDED:
            for path in stage.glob(f"{package}*"):
                if path.name == package or path.name == f"{package}.py" or path.name.startswith(f"{package}-"):
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
        shutil.rmtree(stage / "bin", ignore_errors=True)
        shutil.copytree(LAYER / "python" / "mcp_platform", stage / "mcp_platform")
        for cache in stage.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        compile_bytecode(stage, python)
        # Replace the output whole: never leave a half-copied layer.
        output.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(output / "python", ignore_errors=True)
        shutil.copytree(stage, output / "python", symlinks=True)
    (output / STAMP).write_text(stamp_for(architecture, python) + "\n")
    print(f"layer ({architecture}, Python {python}): {output / 'python'} ({len(locked.pins)} locked packages)")


def main(argv: list[str]) -> None:
    if argv[:1] == ["lock"] and len(argv) == 1:
        lock()
    elif argv[:1] == ["build"] and len(argv) in (2, 3):
        architecture = argv[1]
        build(architecture, Path(argv[2]) if len(argv) == 3 else ROOT / "build" / f"layer-{architecture}")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
