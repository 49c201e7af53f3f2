#!/usr/bin/env bash
# Print a Python interpreter of version 3.12 or newer (Django 6 needs it), or fail saying so.
set -euo pipefail
candidates=(python3.13 python3.12 python3)
for dir in /root/.pyenv/versions/3.13*/bin /root/.pyenv/versions/3.12*/bin /usr/local/bin /usr/bin; do
  [ -d "$dir" ] && candidates+=("$dir/python3")
done
for py in "${candidates[@]}"; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    command -v "$py"
    exit 0
  fi
done
echo "VeriHarm Review needs Python 3.12 or newer (Django 6); none was found on PATH." >&2
exit 1
