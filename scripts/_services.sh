# Sourced (or run) by scripts/test.sh: makes sure the PostgreSQL and Redis server binaries the
# test suite starts on loopback (seamkit_services), and headless Chromium, are installed. Installs the Debian
# packages only when a binary is missing, so a second run costs a few milliseconds.
set -euo pipefail

_seamkit_missing_services=()
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && ! command -v initdb >/dev/null 2>&1; then
  _seamkit_missing_services+=(postgresql)
fi
if ! command -v redis-server >/dev/null 2>&1; then
  _seamkit_missing_services+=(redis-server)
fi
# headless Chromium renders the HTML eval report in the seamkit-evals tests
if [ ! -x /usr/bin/chromium ]; then
  _seamkit_missing_services+=(chromium)
fi
if [ ${#_seamkit_missing_services[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "seamkit setup: installing ${_seamkit_missing_services[*]} (the tests start real servers on loopback)" >&2
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d 101: the packages must not start system-wide services; tests start their own
    _seamkit_policy=/usr/sbin/policy-rc.d
    _seamkit_had_policy=0
    [ -e "$_seamkit_policy" ] && _seamkit_had_policy=1
    [ "$_seamkit_had_policy" = 1 ] || printf '#!/bin/sh\nexit 101\n' > "$_seamkit_policy"
    [ "$_seamkit_had_policy" = 1 ] || chmod +x "$_seamkit_policy"
    _seamkit_rc=0
    apt-get -o DPkg::Lock::Timeout=300 update -qq &&
      apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
        "${_seamkit_missing_services[@]}" >/dev/null || _seamkit_rc=$?
    [ "$_seamkit_had_policy" = 1 ] || rm -f "$_seamkit_policy"
    if [ "$_seamkit_rc" != 0 ]; then
      echo "seamkit setup: installing ${_seamkit_missing_services[*]} failed (apt-get exit $_seamkit_rc)" >&2
      exit "$_seamkit_rc"
    fi
  else
    echo "seamkit setup: the tests need ${_seamkit_missing_services[*]}; install them (e.g. apt-get install postgresql redis-server) or run as root" >&2
    exit 2
  fi
fi
unset _seamkit_missing_services
