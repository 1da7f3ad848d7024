#!/usr/bin/env bash
# Static determinism check of the workflow code with Temporal's workflowcheck.
#
#   tools/workflowcheck/run.sh [packages...]     (default: ./workflows/...)
#
# The analyser lives in this directory's own module (go.mod here), so its
# dependencies never enter the main go.mod. It is built once into bin/ and then
# run from the repository root, where it loads the packages of the main module.
# Exit status 0: clean; non-zero: a finding (printed with its call chain).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${WORKFLOWCHECK_BIN:-$root/bin/workflowcheck}
mkdir -p "$(dirname "$bin")"
# GOFLAGS is cleared for the tool build only: it is a different module, and a
# caller's -modfile (meant for the main module) must not apply to it.
(cd "$root/tools/workflowcheck" && GOFLAGS= go build -o "$bin" go.temporal.io/sdk/contrib/tools/workflowcheck)
cd "$root"
if [ $# -eq 0 ]; then set -- ./workflows/...; fi
"$bin" -show-pos "$@"
echo "workflowcheck: clean: $*"
