#!/usr/bin/env bash
# Build the sandbox base system once and reuse it.
#
# 1. A debootstrap tree (Debian bookworm, minbase + python3/pytest) at
#    ${VERIHARM_SANDBOX_ROOT:-$REPO/.cache/sandbox-root}. The bubblewrap backend
#    binds it read-only as "/" of every sandbox.
# 2. When a Docker engine answers, the same tree imported as the image
#    ${VERIHARM_SANDBOX_IMAGE:-veriharm-sandbox:bookworm} for the docker backend.
#
# Idempotent: each step is skipped when its result already exists. The tree is
# built in a temporary sibling directory and renamed into place only after
# debootstrap succeeded, so an interrupted build never looks like a finished one.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="${VERIHARM_SANDBOX_ROOT:-$REPO/.cache/sandbox-root}"
IMAGE="${VERIHARM_SANDBOX_IMAGE:-veriharm-sandbox:bookworm}"
SUITE="${VERIHARM_SANDBOX_SUITE:-bookworm}"
MIRROR="${VERIHARM_SANDBOX_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="python3,python3-pytest,bash,coreutils,file,procps"

log() { printf '[build_sandbox_image] %s\n' "$*" >&2; }

BUILD_PID=""
BUILD_TMP=""

cleanup_build() {
    # Stop a running debootstrap (it would otherwise go on writing) and drop its tree.
    if [[ -n "$BUILD_PID" ]] && kill -0 "$BUILD_PID" 2>/dev/null; then
        kill -TERM -- "-$BUILD_PID" 2>/dev/null || kill -TERM "$BUILD_PID" 2>/dev/null || true
        wait "$BUILD_PID" 2>/dev/null || true
    fi
    if [[ -n "$BUILD_TMP" ]]; then
        # debootstrap mounts /proc and /sys inside the target while it installs:
        # detach those before deleting, and never cross into another filesystem.
        awk -v p="$BUILD_TMP/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r \
            | xargs -r -n1 umount -l 2>/dev/null || true
        rm -rf --one-file-system "$BUILD_TMP" "$BUILD_TMP.log"
    fi
}

build_root() {
    if [[ -x "$ROOT/usr/bin/python3" && -f "$ROOT/.veriharm-complete" ]]; then
        log "root tree present: $ROOT"
        return 0
    fi
    if [[ -e "$ROOT" ]]; then
        # Exists but lacks the completion marker: a partial/foreign tree. Refuse to
        # guess; a human should look (it may be someone's data).
        log "ERROR: $ROOT exists but is not a complete sandbox root (no .veriharm-complete); remove it and re-run"
        exit 1
    fi
    command -v debootstrap >/dev/null || { log "ERROR: debootstrap not installed (apt-get install debootstrap)"; exit 1; }
    local parent
    parent="$(dirname "$ROOT")"
    mkdir -p "$parent"
    # Leftovers of earlier interrupted builds are ours (name pattern) and useless;
    # the lock held by our caller guarantees none of them is still being built.
    rm -rf "$parent"/.sandbox-root-build.* 2>/dev/null || true
    BUILD_TMP="$(mktemp -d "$parent/.sandbox-root-build.XXXXXX")"
    trap cleanup_build EXIT
    trap 'cleanup_build; exit 130' INT TERM HUP
    log "debootstrap $SUITE into $BUILD_TMP (takes about a minute)"
    # In the background (own process group via setsid) so that a signal to this
    # script runs the trap at once and can stop debootstrap and its children.
    setsid debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$BUILD_TMP" "$MIRROR" \
        >"$BUILD_TMP.log" 2>&1 &
    BUILD_PID=$!
    if ! wait "$BUILD_PID"; then
        BUILD_PID=""
        tail -n 40 "$BUILD_TMP.log" >&2
        log "ERROR: debootstrap failed"
        exit 1
    fi
    BUILD_PID=""
    rm -f "$BUILD_TMP.log"
    local tmp="$BUILD_TMP"
    # Trim what a sandbox never needs; keeps the docker import and copies small.
    rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/* 2>/dev/null || true
    # debootstrap copies the host's resolv.conf/hostname; the sandbox must not
    # learn anything about the host from them.
    : >"$tmp/etc/resolv.conf"
    echo sandbox >"$tmp/etc/hostname"
    # Mount points the bubblewrap backend binds over; they must exist because the
    # tree is read-only at run time.
    mkdir -p "$tmp/app" "$tmp/tmp" "$tmp/run" "$tmp/var/tmp" "$tmp/root" "$tmp/usr/local"
    chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
    # mktemp made the top directory 0700; the bubblewrap backend runs sandboxes
    # under unprivileged host uids that must traverse it, and the docker import
    # would otherwise give the image a 0700 "/".
    chmod 0755 "$tmp"
    date -u +%FT%TZ >"$tmp/.veriharm-complete"
    mv -T "$tmp" "$ROOT"
    BUILD_TMP=""
    trap - EXIT INT TERM HUP
    log "root tree ready: $ROOT"
}

import_image() {
    if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
        log "no Docker engine answers; skipping image import (run scripts/start_docker.sh first if needed)"
        return 0
    fi
    if docker image inspect "$IMAGE" >/dev/null 2>&1; then
        log "image present: $IMAGE"
        return 0
    fi
    log "importing $ROOT as $IMAGE"
    # The completion marker is host bookkeeping, not part of the image.
    tar -C "$ROOT" --exclude=./.veriharm-complete -c . \
        | docker import --change 'CMD ["/bin/bash"]' --change 'WORKDIR /app' - "$IMAGE" >/dev/null
    log "image ready: $IMAGE"
}

# One build at a time (e.g. two test sessions starting together): a second caller
# waits, then finds the tree done.
mkdir -p "$(dirname "$ROOT")"
exec 9>"$(dirname "$ROOT")/.sandbox-root.lock"
if ! flock -w 1800 9; then
    log "ERROR: another build holds $(dirname "$ROOT")/.sandbox-root.lock for over 30 minutes"
    exit 1
fi
build_root
import_image
