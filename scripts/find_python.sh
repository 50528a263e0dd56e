#!/usr/bin/env bash
# Prints the path of a CPython interpreter of the given minor version (the Lambda runtime's, read
# from .python-version by the Makefile), or explains how to get one and exits 2.
#
#   bash scripts/find_python.sh 3.13
set -euo pipefail
WANT="${1:?usage: find_python.sh <major.minor>}"

is_wanted() {
  "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$WANT' else 1)" 2>/dev/null
}

for candidate in "python$WANT" python3; do
  path="$(command -v "$candidate" 2>/dev/null || true)"
  if [ -n "$path" ] && is_wanted "$path"; then
    "$path" -c "import sys; print(sys.executable)"
    exit 0
  fi
done
# pyenv installs that are not the active version (its shims hide them).
for path in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$WANT".*/bin/python"$WANT"; do
  if [ -x "$path" ] && is_wanted "$path"; then
    echo "$path"
    exit 0
  fi
done
cat >&2 <<MSG
Python $WANT is required: it is the Lambda runtime's Python (.python-version), and the tests run
the deployed code with it. Install it, then run make again:
  pyenv install $WANT        (or: uv python install $WANT; or your package manager's python$WANT)
or point the Makefile at one: make test PYTHON=/path/to/python$WANT
MSG
exit 2
