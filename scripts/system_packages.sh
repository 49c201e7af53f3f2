#!/usr/bin/env bash
# Debian packages the test suite needs: Chromium for browser tests, bubblewrap and Docker for sandboxes,
# a C compiler for the library the verifier tests plant in a sandbox.
# With the argument "sandbox", only what the sandbox system needs (bubblewrap, debootstrap, and npm to
# install the harness runtimes from their lockfiles): `make run`.
set -euo pipefail
missing=()
if [ "${1:-}" != sandbox ]; then
  command -v chromium >/dev/null || missing+=(chromium)
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
fi
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "Missing system packages: ${missing[*]}. Install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing ${missing[*]} ..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
