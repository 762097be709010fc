#!/usr/bin/env bash
# Fails if docs/config-reference.md no longer matches the parameter tables (run
# scripts/gen-docs.sh to regenerate it). Usage: check-docs.sh XPUSIM_BINARY REPO_ROOT
set -euo pipefail
bin=$1 root=$2
expected=$("$bin" describe --format markdown)
actual=$(sed -n '/^## Chip kind/,$p' "$root/docs/config-reference.md")
if [ "$expected" != "$actual" ]; then
  echo "docs/config-reference.md is out of date with the parameter tables; run scripts/gen-docs.sh" >&2
  diff <(echo "$expected") <(echo "$actual") | head -20 >&2
  exit 1
fi
echo "docs/config-reference.md matches the parameter tables"
