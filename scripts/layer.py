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

    @classmethod
    def read(cls, path: Path) -> Lock:
        text = path.read_text()
        header = dict(re.findall(r"^# (requirements.txt sha256|python): (\S+)$", text, re.MULTILINE))
        pins = tuple(Pin(**m.groupdict()) for m in map(LOCK_LINE.match, text.splitlines()) if m)
        return cls(header.get("requirements.txt sha256", ""), header.get("python", ""), pins)

    def render(self, architecture: str) -> str:
        lines = [
            "# Generated by `make lock` (scripts/layer.py) from requirements.txt; do not edit.",
            f"# requirements.txt sha256: {self.requirements_sha256}",
            f"# python: {self.python}",
            f"# platform: manylinux {ARCHITECTURES[architecture]}",
            *(pin.line() for pin in sorted(self.pins, key=lambda p: normalized(p.name))),
        ]
        return "\n".join(lines) + "\n"


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
    sdist_only = [
        line.strip() for line in requirements.splitlines() if normalized(line.split("==")[0].strip()) in SDIST_ONLY
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
                "--find-links", str(work), "--target", str(work / "target"), "-r", str(REQUIREMENTS),
            )  # fmt: skip
            pins = []
            for item in json.loads(report)["install"]:
                name, version = item["metadata"]["name"], item["metadata"]["version"]
                sha = sdist_hashes.get(normalized(name)) or item["download_info"]["archive_info"]["hashes"]["sha256"]
                pins.append(Pin(normalized(name), version, sha))
            locked = Lock(hashlib.sha256(requirements.encode()).hexdigest(), python, tuple(pins))
            lock_path(architecture).write_text(locked.render(architecture))
            print(f"{lock_path(architecture).relative_to(ROOT)}: {len(pins)} packages for Python {python}")


def build(architecture: str, output: Path) -> None:
    if architecture not in ARCHITECTURES:
        raise SystemExit(f"layer.py: architecture must be one of {', '.join(ARCHITECTURES)}, got {architecture!r}")
    python = lambda_python()
    locked = Lock.read(lock_path(architecture))
    if locked.python != python:
        raise SystemExit(f"{lock_path(architecture)} is for Python {locked.python}, the runtime is {python}: make lock")
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
