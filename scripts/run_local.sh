#!/usr/bin/env bash
# Run the application on the embedded default (SQLite, filesystem broker): a Celery worker
# in the background and the development server in the foreground.
#
# The sandbox system (scripts/build_sandbox_image.sh: a Debian tree for the local bubblewrap backend,
# 2-3 minutes) needs bubblewrap and debootstrap: as root with apt-get they are installed first,
# otherwise the terminal says what is missing and how to install it. On first start the system is
# built in the background (at once, or as soon as those packages appear); its state (waiting,
# building, ready or failed) and log go to $VAR/sandbox-build.state and .log, which the launch page
# shows. `manage.py demo_evaluate --wait` launches the demo's evaluation runs as soon as the system is
# ready, however it got built, and only if they do not exist yet; then the native harness demo run
# (Claude Code and Codex) once their runtimes are built, if the build makes them.
#
# Ctrl-C stops the server and asks the worker to finish the trials it is running (warm shutdown);
# Ctrl-C again asks for a cold shutdown, and a worker still there 5 seconds later is killed with its
# pool. The worker has a session of its own, so each Ctrl-C reaches it once, from this script (the
# terminal's SIGINT used to come on top of this script's SIGTERMs), and this script waits for it
# (it used to exit at once, leaving a worker that no later Ctrl-C could reach). The kill is needed:
# Celery 5.6 runs a cold shutdown inside its signal handler, which during a warm shutdown stops the
# prefork pool a second time; a pool process stopped while it holds the pool's result-queue lock
# leaves that lock taken, and the main process and the remaining pool process then wait on it for
# ever. A killed worker's trials are taken up again by the recovery sweep (veriharm_site/recovery.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
VAR=${VERIHARM_VAR_DIR:-var}
ROOT=${VERIHARM_SANDBOX_ROOT:-.cache/sandbox-root}
VERIFIER=${VERIHARM_VERIFIER_ROOT:-$ROOT-verifier}
COLD_GRACE_SECONDS=5
export VERIHARM_SANDBOX_BUILD_STATE="$VAR/sandbox-build.state" VERIHARM_SANDBOX_BUILD_LOG="$VAR/sandbox-build.log"
mkdir -p "$VAR"

worker=""
background=""
worker_signals=0
cold_deadline=""

# One step further each time: warm shutdown first, then cold.
stop_worker() {
  if [ -z "$worker" ] || ! kill -0 "$worker" 2>/dev/null; then return 0; fi
  worker_signals=$((worker_signals + 1))
  if [ "$worker_signals" -eq 1 ]; then
    echo "Stopping the worker: it finishes the trials it is running (Ctrl-C again stops them at once)."
    kill -TERM "$worker" 2>/dev/null || true
  elif [ "$worker_signals" -eq 2 ]; then
    echo "Stopping the worker now: its running trials end unfinished and are taken up again at the next start."
    kill -QUIT "$worker" 2>/dev/null || true
    cold_deadline=$((SECONDS + COLD_GRACE_SECONDS))
  fi
}

finish() {
  trap stop_worker INT TERM HUP
  trap - EXIT
  if [ -n "$background" ]; then kill -TERM -- "-$background" 2>/dev/null || true; fi
  stop_worker
  while [ -n "$worker" ] && kill -0 "$worker" 2>/dev/null; do
    if [ -n "$cold_deadline" ] && [ "$SECONDS" -ge "$cold_deadline" ]; then
      echo "The worker did not stop within ${COLD_GRACE_SECONDS}s of its cold shutdown: killing it."
      kill -KILL -- "-$worker" 2>/dev/null || true
    fi
    sleep 0.5 || true
  done
  wait 2>/dev/null || true
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# What the sandbox system needs on this machine: bubblewrap to run trials, debootstrap to build it.
sandbox_missing() {
  local missing=""
  command -v bwrap >/dev/null || missing="$missing bubblewrap"
  if [ ! -f "$ROOT/.veriharm-complete" ] || [ ! -f "$VERIFIER/.veriharm-verifier-id" ]; then
    command -v debootstrap >/dev/null || missing="$missing debootstrap"
  fi
  # The native CLIs' runtimes are installed from their npm lockfiles.
  command -v npm >/dev/null || missing="$missing npm"
  echo "${missing# }"
}
missing=$(sandbox_missing)
if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing the sandbox system's packages ($missing) ..."
  scripts/system_packages.sh sandbox || true
  missing=$(sandbox_missing)
fi
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo "
  echo
  echo "Evaluations cannot run yet: $missing missing (the sandbox system needs them). Install with:"
  echo
  echo "    ${sudo}apt-get install -y $missing"
  echo
  echo "Until then evaluations wait, and so do the demo runs; once installed, the sandbox system is built"
  echo "and the demo runs start by themselves (no restart needed)."
  echo
fi

# A demo database made before the project's own user model (accounts.User) cannot be migrated;
# it holds only demo data, so it is set aside under var/ (not deleted) and made anew, saying so.
$PY manage.py demo_database_check --recreate
$PY manage.py migrate --noinput -v0
# The README's table of demo logins holds with this one password; without it each gets a random one.
$PY manage.py load_demo --password veriharm-demo --tasks "${VERIHARM_DEMO_TASKS:-120}"
setsid .venv/bin/celery -A veriharm_site worker --loglevel=INFO --concurrency=2 > "$VAR/worker.log" 2>&1 &
worker=$!
# For whoever has to find it (the worker leads its own session and process group).
echo "$worker" > "$VAR/worker.pid"

# In its own session too, so that stopping this script stops the build and everything it started.
setsid bash -c '
  set -u
  state="$1"; log="$2"; py="$3"; root="$4"; verifier="$5"
  # Everything the build makes for the local backend: the tree, the verifier and each harness runtime
  # (VERIHARM_HARNESSES="a b": those only; a start after an interrupted build finishes it). Trials and
  # the demo wait for what they use only.
  built() {
    [ -f "$root/.veriharm-complete" ] && [ -f "$verifier/.veriharm-verifier-id" ] || return 1
    for name in ${VERIHARM_HARNESSES:-$(ls scripts/harnesses)}; do
      [ -f "${VERIHARM_HARNESS_ROOT:-$root-harness}/$name/.veriharm-harness-id" ] || return 1
    done
  }
  : > "$log"
  # Launches the demo runs once the sandbox system is ready, however it gets there; its few lines
  # (what it waits for, what it launched) go to the terminal too.
  "$py" manage.py demo_evaluate --wait 2>&1 | tee -a "$log" &
  tried=""
  while ! built; do
    missing=""
    command -v bwrap >/dev/null || missing="$missing bubblewrap"
    command -v debootstrap >/dev/null || missing="$missing debootstrap"
    if [ -n "$missing" ]; then
      if [ "$(cat "$state" 2>/dev/null)" != waiting ]; then
        echo waiting > "$state"
        echo "Missing system packages:$missing. Install them (apt-get install -y$missing); the build starts once they are there." >> "$log"
      fi
    elif [ -z "$tried" ]; then
      tried=1
      echo building > "$state"
      # The harness runtimes and the Docker image come last: a trial needs the tree, the verifier
      # runtime and the runtimes its agent runs (evaluation/sandbox/images.py system_missing), and
      # one taken while they are still being built waits for them without spending an attempt.
      if scripts/build_sandbox_image.sh >> "$log" 2>&1; then echo ready > "$state"; else echo failed > "$state"; fi
      continue
    fi
    # Waiting for the packages, or after a failed build for one by hand (scripts/build_sandbox_image.sh).
    sleep 5
  done
  [ "$(cat "$state" 2>/dev/null)" = ready ] || echo ready > "$state"
  wait
' run_local_sandbox "$VERIHARM_SANDBOX_BUILD_STATE" "$VERIHARM_SANDBOX_BUILD_LOG" "$PY" "$ROOT" "$VERIFIER" &
background=$!

echo
echo "VeriHarm Review is running at http://$HOST:$PORT/  (worker log: $VAR/worker.log; Ctrl-C stops both)"
echo "The sandbox system builds in the background on first start, in 2-3 minutes (log: $VAR/sandbox-build.log);"
echo "the demo runs start by themselves once it is ready. Evaluations -> Launch shows its state."
echo
$PY manage.py runserver "$HOST:$PORT"
