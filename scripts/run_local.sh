#!/usr/bin/env bash
# Run the application on the embedded default (SQLite, filesystem broker): a Celery worker
# in the background and the development server in the foreground.
#
# On first start the sandbox system (scripts/build_sandbox_image.sh: a Debian tree for the local
# bubblewrap backend, about a minute) is built in the background; its state (building, ready or
# failed) and log go to $VAR/sandbox-build.state and .log, which the launch page shows. Once it is
# ready the demo's evaluation runs are launched (manage.py demo_evaluate, once).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
VAR=${VERIHARM_VAR_DIR:-var}
export VERIHARM_SANDBOX_BUILD_STATE="$VAR/sandbox-build.state" VERIHARM_SANDBOX_BUILD_LOG="$VAR/sandbox-build.log"
mkdir -p "$VAR"
# A demo database made before the project's own user model (accounts.User) cannot be migrated;
# it holds only demo data, so it is set aside under var/ (not deleted) and made anew, saying so.
$PY manage.py demo_database_check --recreate
$PY manage.py migrate --noinput -v0
# The README's table of demo logins holds with this one password; without it each gets a random one.
$PY manage.py load_demo --password veriharm-demo --tasks "${VERIHARM_DEMO_TASKS:-120}"
.venv/bin/celery -A veriharm_site worker --loglevel=INFO --concurrency=2 > "$VAR/worker.log" 2>&1 &
worker=$!

# In its own session, so that stopping this script stops the build and everything it started.
setsid bash -c '
  set -u
  state="$1"; log="$2"; py="$3"
  if [ ! -f "${VERIHARM_SANDBOX_ROOT:-.cache/sandbox-root}/.veriharm-complete" ] \
     || [ ! -f "${VERIHARM_VERIFIER_ROOT:-${VERIHARM_SANDBOX_ROOT:-.cache/sandbox-root}-verifier}/.veriharm-verifier-id" ]; then
    echo building > "$state"
    {
      missing=""
      command -v bwrap >/dev/null || missing="$missing bubblewrap"
      command -v debootstrap >/dev/null || missing="$missing debootstrap"
      if [ -n "$missing" ]; then
        echo "Missing system packages:$missing. Install them (as root: apt-get install -y$missing) and start again."
        false
      else
        scripts/build_sandbox_image.sh
      fi
    } > "$log" 2>&1
    status=$?
    # The harness runtimes and the Docker image come last: the local backend needs only the tree
    # and the verifier runtime, which the launch page checks itself.
    if [ $status -eq 0 ]; then echo ready > "$state"; else echo failed > "$state"; fi
  fi
  "$py" manage.py demo_evaluate >> "$log" 2>&1 || true
' run_local_sandbox "$VERIHARM_SANDBOX_BUILD_STATE" "$VERIHARM_SANDBOX_BUILD_LOG" "$PY" &
builder=$!
trap 'kill -TERM -- -$builder 2>/dev/null || true; kill $worker 2>/dev/null || true' EXIT INT TERM

echo
echo "VeriHarm Review is running at http://$HOST:$PORT/  (worker log: $VAR/worker.log; Ctrl-C stops both)"
echo "The sandbox system builds in the background on first start (log: $VAR/sandbox-build.log); the demo"
echo "runs start once it is ready. Evaluations -> Launch shows its state."
echo
$PY manage.py runserver "$HOST:$PORT"
