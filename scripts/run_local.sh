#!/usr/bin/env bash
# Run the application on the embedded default (SQLite, filesystem broker): a Celery worker
# in the background and the development server in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
# A demo database made before the project's own user model (accounts.User) cannot be migrated;
# it holds only demo data, so it is set aside under var/ (not deleted) and made anew, saying so.
$PY manage.py demo_database_check --recreate
$PY manage.py migrate --noinput -v0
# The README's table of demo logins holds with this one password; without it each gets a random one.
$PY manage.py load_demo --password veriharm-demo
mkdir -p var
.venv/bin/celery -A veriharm_site worker --loglevel=INFO --concurrency=2 > var/worker.log 2>&1 &
worker=$!
trap 'kill $worker 2>/dev/null || true' EXIT INT TERM
echo
echo "VeriHarm Review is running at http://$HOST:$PORT/  (worker log: var/worker.log; Ctrl-C stops both)"
if [ ! -d "${VERIHARM_SANDBOX_ROOT:-.cache/sandbox-root}/usr" ]; then
  echo "Evaluations run agents in sandboxes built from a Debian tree: build it once with"
  echo "scripts/build_sandbox_image.sh (needs root, debootstrap and bubblewrap; about a minute)."
fi
echo
$PY manage.py runserver "$HOST:$PORT"
