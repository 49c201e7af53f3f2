#!/usr/bin/env bash
# Start PostgreSQL and Redis on this machine when they are not answering.
set -euo pipefail
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if ! answers 5432; then
  echo "Starting PostgreSQL ..."
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
fi
if ! answers 6379; then
  echo "Starting Redis ..."
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
fi
for _ in $(seq 1 30); do
  answers 5432 && answers 6379 && exit 0
  sleep 1
done
echo "PostgreSQL or Redis did not come up within 30 s." >&2
exit 1
