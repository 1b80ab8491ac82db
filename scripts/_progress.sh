# Sourced by scripts/_setup.sh (and its tests): runs a long pip install with its output in a log
# file and shows, while it runs, how long it has taken and what it is doing, read from pip's own
# log lines (collecting, downloading, building a wheel, compiling llama.cpp with cmake's
# percentage, installing). On a terminal (stderr) one status line is redrawn in place every
# second; elsewhere (CI logs, pipes) a line is printed every SEAMKIT_PROGRESS_EVERY seconds
# (default 30). When the command fails, the end of the log is printed.

# seamkit_elapsed SECONDS -> "45s", "3m07s"
seamkit_elapsed() {
  local s=$1
  if [ "$s" -lt 60 ]; then printf '%ds' "$s"; else printf '%dm%02ds' $((s / 60)) $((s % 60)); fi
}

# seamkit_phase LOG -> what pip is doing now, from the last line of LOG that says so
seamkit_phase() {
  local line pkg pct
  line="$(grep -a -E '^Collecting |Downloading |Using cached |Building wheel for |Building editable for |\[ *[0-9]+%\] |\[[0-9]+/[0-9]+\] |^Installing collected packages|^Successfully installed|Preparing metadata|Obtaining file' "$1" 2>/dev/null | tail -n 1 || true)"
  case "$line" in
    *"Successfully installed"*) echo "installed" ;;
    *"Installing collected packages"*) echo "installing the packages into .venv" ;;
    *"%] "*)
      # cmake's build progress (Makefiles: "[ 45%]"); llama-cpp-python is the only package here
      # built with cmake
      pct="$(printf '%s' "$line" | sed -E 's/.*\[ *([0-9]+)%\].*/\1/')"
      echo "building wheel for llama-cpp-python: compiling llama.cpp (${pct}%)" ;;
    *"["[0-9]*"/"[0-9]*"] "*)
      # Ninja's: "[97/210]", as a percentage
      pct="$(printf '%s' "$line" | sed -E 's#.*\[([0-9]+)/([0-9]+)\].*#\1 \2#')"
      set -- $pct
      echo "building wheel for llama-cpp-python: compiling llama.cpp ($(( $1 * 100 / ($2 > 0 ? $2 : 1) ))%, step $1 of $2)" ;;
    *"Building wheel for "*)
      pkg="$(printf '%s' "$line" | sed -E 's/.*Building wheel for ([^ ]+).*/\1/')"
      case "$pkg" in
        llama[-_]cpp*) echo "building wheel for $pkg: compiling llama.cpp" ;;
        *) echo "building wheel for $pkg" ;;
      esac ;;
    *"Building editable for "*)
      echo "building editable $(printf '%s' "$line" | sed -E 's/.*Building editable for ([^ ]+).*/\1/')" ;;
    *"Downloading "*)
      echo "downloading $(printf '%s' "$line" | sed -E 's/.*Downloading ([^ ]+).*/\1/; s#.*/##')" ;;
    *"Using cached "*)
      echo "using cached $(printf '%s' "$line" | sed -E 's/.*Using cached ([^ ]+).*/\1/; s#.*/##')" ;;
    *"Collecting "*)
      echo "collecting $(printf '%s' "$line" | sed -E 's/^Collecting ([^ ]+).*/\1/')" ;;
    *) echo "starting" ;;
  esac
}

# seamkit_progress LOG COMMAND [ARGS...]: run COMMAND with stdout and stderr into LOG, showing
# progress on stderr; returns COMMAND's exit status (the end of LOG printed when it is not 0).
seamkit_progress() {
  local log=$1; shift
  local every="${SEAMKIT_PROGRESS_EVERY:-30}" start now pid rc=0 tty=0 last line
  [ -t 2 ] && tty=1
  : > "$log"
  start=$(date +%s)
  last=$start
  "$@" > "$log" 2>&1 &
  pid=$!
  # Ctrl-C or a kill stops the command too, and a redrawn line is ended first
  trap 'kill "$pid" 2>/dev/null; [ "$tty" = 1 ] && printf "\n" >&2; exit 130' INT
  trap 'kill "$pid" 2>/dev/null; [ "$tty" = 1 ] && printf "\n" >&2; exit 143' TERM
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    now=$(date +%s)
    line="seamkit setup: $(seamkit_elapsed $((now - start))) elapsed: $(seamkit_phase "$log")"
    if [ "$tty" = 1 ]; then
      printf '\r\033[K%s' "$line" >&2
    elif [ $((now - last)) -ge "$every" ]; then
      printf '%s\n' "$line" >&2
      last=$now
    fi
  done
  wait "$pid" || rc=$?
  trap - INT TERM
  now=$(date +%s)
  [ "$tty" = 1 ] && printf '\r\033[K' >&2
  if [ "$rc" != 0 ]; then
    printf 'seamkit setup: failed after %s (exit %d); the last lines of %s:\n' \
      "$(seamkit_elapsed $((now - start)))" "$rc" "$log" >&2
    tail -n 40 "$log" >&2
    return "$rc"
  fi
  printf 'seamkit setup: done in %s (log: %s)\n' "$(seamkit_elapsed $((now - start)))" "$log" >&2
}

# seamkit_install_notice N_PLUGINS CACHED: what the install is about to do and how long it may take
# (CACHED=1: a llama-cpp-python wheel built here before is in pip's cache)
seamkit_install_notice() {
  echo "seamkit setup: installing the host, $1 plugins and dev tools into .venv" >&2
  if [ "$2" = 1 ]; then
    echo "seamkit setup: llama.cpp was compiled here before: pip reuses that wheel (a minute or two)" >&2
  else
    echo "seamkit setup: the first time, this compiles llama.cpp from source (llama-cpp-python ships no" \
         "wheel for every machine): about 5 minutes on a fast machine, 15 or more on 2 busy cores." \
         "It happens once: later setups reuse the wheel from pip's cache." >&2
  fi
}
