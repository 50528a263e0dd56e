#!/usr/bin/env bash
# Builds the shared Lambda layer without Docker: pip resolves wheels for the Lambda platform
# (--platform manylinux..., --only-binary) instead of compiling inside an Amazon Linux image.
#
#   bash scripts/build_layer.sh <arm64|x86_64> [output dir]
#
# Output: <output dir>/python/{dependencies, mcp_platform} (default build/layer-<arch>), the
# layout Lambda mounts under /opt/python, and <output dir>/requirements.sha256, which tells the
# CDK layer construct (stacks/shared_layer.py) whether these dependencies are still current.
# That construct reuses them when they are, and otherwise runs this script during synth.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ARCH="${1:-arm64}"
OUT="${2:-$ROOT/build/layer-$ARCH}"
# Must match LAMBDA_PYTHON_VERSION in stacks/config.py (the runtime of every function).
PY_VERSION="${LAMBDA_PYTHON_VERSION:-3.14}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"

case "$ARCH" in
  arm64) MACHINE=aarch64 ;;
  x86_64) MACHINE=x86_64 ;;
  *) echo "build_layer.sh: architecture must be arm64 or x86_64, got '$ARCH'" >&2; exit 2 ;;
esac

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_COLOR=1
WHEELS="$ROOT/build/wheels"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$WHEELS"

# amazon-dax-client ships only as an sdist, which --only-binary refuses: turn it into a
# pure-Python wheel with the local interpreter first (it has no compiled code).
DAX_REQ="$(grep -E '^amazon-dax-client' "$ROOT/layers/platform/requirements.txt" || true)"
if [ -n "$DAX_REQ" ]; then
  "$PYTHON" -m pip wheel -q --no-deps -w "$WHEELS" "$DAX_REQ" 2>&1 | { grep -v '^WARNING: Location' || true; }
fi

"$PYTHON" -m pip install -q --no-compile \
  --platform "manylinux2014_$MACHINE" --platform "manylinux_2_28_$MACHINE" \
  --implementation cp --python-version "$PY_VERSION" --only-binary=:all: \
  --find-links "$WHEELS" -t "$STAGE/python" -r "$ROOT/layers/platform/requirements.txt" 2>&1 \
  | { grep -vE '^WARNING: (Target directory|Location)' || true; }

# The Lambda runtime already ships boto3 with botocore and its transport dependencies; copies in
# /opt/python would shadow them (amazon-dax-client pulls botocore in) and add ~40 MB to the
# layer. six and jmespath stay: they are direct dependencies of the layer's own packages.
for pkg in boto3 botocore s3transfer urllib3 dateutil python_dateutil; do
  rm -rf "$STAGE/python/$pkg" "$STAGE/python/$pkg.py" "$STAGE/python/$pkg"-*.dist-info
done
rm -rf "$STAGE/python/bin"
find "$STAGE/python" -name __pycache__ -type d -prune -exec rm -rf {} +

cp -R "$ROOT/layers/platform/python/mcp_platform" "$STAGE/python/"
find "$STAGE/python/mcp_platform" -name __pycache__ -type d -prune -exec rm -rf {} +

# Replace the output atomically enough for a build directory: never leave a half-copied layer.
mkdir -p "$OUT"
rm -rf "$OUT/python"
cp -R "$STAGE/python" "$OUT/python"
echo "$(sha256sum "$ROOT/layers/platform/requirements.txt" | cut -d' ' -f1) python$PY_VERSION" \
  > "$OUT/requirements.sha256"
echo "layer ($ARCH, Python $PY_VERSION): $OUT/python ($(du -sh "$OUT/python" | cut -f1))"
