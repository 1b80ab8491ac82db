# Sourced by scripts/quickstart.sh and scripts/test.sh: makes .venv with the host, every plugin
# of this repository (editable) and the dev tools. Safe to run again: it re-installs only when a
# pyproject.toml or requirements file changed. pip's wheel cache makes the llama.cpp build a
# one-time cost per machine. While pip works, scripts/_progress.sh shows the elapsed time and the
# phase (its log: .venv/seamkit-setup.log).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

pick_python() {
  for py in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$py" ] || continue
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "seamkit needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

need_root_pkgs=()
command -v cc >/dev/null 2>&1 || need_root_pkgs+=(build-essential)
command -v c++ >/dev/null 2>&1 || need_root_pkgs+=(g++)
command -v git >/dev/null 2>&1 || need_root_pkgs+=(git)
if [ ${#need_root_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "seamkit setup: installing ${need_root_pkgs[*]} (a C/C++ compiler builds llama.cpp)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_root_pkgs[@]}" >/dev/null
  else
    echo "seamkit setup: please install a C and C++ compiler (${need_root_pkgs[*]})" >&2
    exit 2
  fi
fi

PY="$(pick_python)"
if [ ! -x .venv/bin/python ]; then
  echo "seamkit setup: creating .venv with $PY" >&2
  if ! "$PY" -m venv .venv 2>/dev/null; then
    # Debian's system Python ships venv/ensurepip separately
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      ver="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
      DEBIAN_FRONTEND=noninteractive apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python${ver}-venv" >/dev/null ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    "$PY" -m venv .venv
  fi
fi

PLUGINS=()
for d in plugins/*/*/ testkit/*/; do
  [ -f "$d/pyproject.toml" ] && PLUGINS+=("-e" "${d%/}")
done

stamp=".venv/.seamkit-installed"
want="$(cat pyproject.toml requirements-dev.txt plugins/*/*/pyproject.toml testkit/*/pyproject.toml 2>/dev/null | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  source "$ROOT/scripts/_progress.sh"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  cached=0  # a llama-cpp-python wheel this machine built before, in pip's cache
  if .venv/bin/python -m pip cache list 'llama_cpp_python*' 2>/dev/null | grep llama_cpp_python >/dev/null; then
    cached=1
  fi
  seamkit_install_notice $(( ${#PLUGINS[@]} / 2 )) "$cached"
  # -v: pip's log names each phase and carries cmake's build percentage (read by seamkit_progress)
  seamkit_progress .venv/seamkit-setup.log env CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
    .venv/bin/python -m pip install -v --disable-pip-version-check -e . "${PLUGINS[@]}" -r requirements-dev.txt
  echo "$want" > "$stamp"
fi
