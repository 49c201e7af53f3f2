#!/usr/bin/env bash
# Start a local Docker engine if none answers, and wait (bounded) until it does.
#
# Networking is off (--iptables=false --bridge=none): sandboxes run with network
# mode "none" and must never need a bridge, and the host's firewall stays as is.
set -euo pipefail

WAIT_SECONDS="${VERIHARM_DOCKER_WAIT:-60}"
LOG="${VERIHARM_DOCKERD_LOG:-/tmp/dockerd.log}"

log() { printf '[start_docker] %s\n' "$*" >&2; }

if docker info >/dev/null 2>&1; then
    log "Docker engine already answers"
    exit 0
fi

command -v dockerd >/dev/null || { log "ERROR: dockerd not installed (apt-get install docker.io)"; exit 1; }

# A dockerd may already be starting (e.g. a parallel caller): do not start a
# second one on the same socket, just wait for it.
if ! pgrep -x dockerd >/dev/null 2>&1; then
    log "starting dockerd (log: $LOG)"
    # setsid + nohup: the engine must outlive the shell (and the pytest run) that
    # started it, and must not receive that process group's signals.
    setsid nohup dockerd --iptables=false --bridge=none >"$LOG" 2>&1 </dev/null &
fi

deadline=$((SECONDS + WAIT_SECONDS))
until docker info >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
        log "ERROR: Docker engine did not answer within ${WAIT_SECONDS}s; last lines of $LOG:"
        tail -n 30 "$LOG" >&2 2>/dev/null || true
        exit 1
    fi
    sleep 0.5
done
log "Docker engine answers"
