#!/usr/bin/env bash
# Build the application's base image locally, without an image registry: a debootstrap of Debian
# (trixie by default, whose python3 is 3.13) imported as an image, for hosts that cannot pull
# python:3.12-slim-bookworm. The Dockerfile takes it as `--build-arg BASE=<tag>`.
#
# The image is tagged by a content key (the recipe below: suite, packages, edits), so a second
# run finds it and does nothing; change the recipe and a new tag is built. Prints the tag.
#
#   scripts/build_base_image.sh            # -> veriharm-base:trixie-<key>
#
# Environment: VERIHARM_BASE_SUITE (trixie), VERIHARM_BASE_MIRROR (deb.debian.org),
# VERIHARM_BASE_CACHE (where the temporary tree is built, .cache/ of the checkout).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUITE="${VERIHARM_BASE_SUITE:-trixie}"
MIRROR="${VERIHARM_BASE_MIRROR:-http://deb.debian.org/debian}"
CACHE="${VERIHARM_BASE_CACHE:-$REPO/.cache}"
# What the Dockerfile needs from its base: python3 with venv (and so pip), certificates for pip,
# bubblewrap for the local sandbox backend.
PACKAGES="python3,python3-venv,ca-certificates,bubblewrap,util-linux"
# Bumped when what this script does to the tree changes.
RECIPE="veriharm-base recipe 1"
KEY="$(printf '%s\n' "$RECIPE" "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)"
IMAGE="veriharm-base:$SUITE-$KEY"

log() { printf '[build_base_image] %s\n' "$*" >&2; }

docker info >/dev/null 2>&1 || { log "ERROR: no Docker engine answers (scripts/start_docker.sh)"; exit 1; }
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "image present: $IMAGE"
    echo "$IMAGE"
    exit 0
fi
command -v debootstrap >/dev/null || { log "ERROR: debootstrap not installed (apt-get install debootstrap)"; exit 1; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.base-image.lock"
flock -w 1800 9 || { log "ERROR: another build holds $CACHE/.base-image.lock"; exit 1; }
if docker image inspect "$IMAGE" >/dev/null 2>&1; then  # built while we waited
    echo "$IMAGE"
    exit 0
fi

TMP=""
PID=""
cleanup() {
    if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM -- "-$PID" 2>/dev/null || kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    if [[ -n "$TMP" ]]; then
        # debootstrap mounts /proc and /sys inside the target: detach them before deleting.
        awk -v p="$TMP/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r \
            | xargs -r -n1 umount -l 2>/dev/null || true
        rm -rf --one-file-system "$TMP" "$TMP.log"
    fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM HUP
rm -rf --one-file-system "$CACHE"/.base-build.* 2>/dev/null || true
TMP="$(mktemp -d "$CACHE/.base-build.XXXXXX")"
log "debootstrap $SUITE ($PACKAGES) into $TMP (a minute or two)"
setsid debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$TMP" "$MIRROR" >"$TMP.log" 2>&1 &
PID=$!
if ! wait "$PID"; then
    PID=""
    tail -n 40 "$TMP.log" >&2
    log "ERROR: debootstrap failed"
    exit 1
fi
PID=""
rm -rf "$TMP"/var/cache/apt/archives/*.deb "$TMP"/var/lib/apt/lists/* 2>/dev/null || true
# Nothing of the build host's identity in the image (Docker supplies its own at run time).
: >"$TMP/etc/resolv.conf"
echo veriharm >"$TMP/etc/hostname"
chmod 0755 "$TMP"
log "importing as $IMAGE"
tar -C "$TMP" --numeric-owner -c . | docker import \
    --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL veriharm.deploy=base veriharm.base.recipe=\"$RECIPE\" veriharm.base.suite=$SUITE" \
    - "$IMAGE" >/dev/null
log "image ready: $IMAGE ($(docker run --rm --network none "$IMAGE" python3 --version))"
echo "$IMAGE"
