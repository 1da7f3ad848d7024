#!/usr/bin/env bash
# make test-deploy: the deployment tests (e2e/guide_test.go: the walk-through
# of docs/how-to/deploy.md from its own commands; e2e/deploy_test.go,
# e2e/browser_test.go). They run Temporal on Debian's PostgreSQL 15 and look
# at pages in Debian's headless chromium, and check the compose file with
# Debian's docker-compose, which this script installs with
# apt if missing (the tests never install anything themselves). Screenshots
# go to out/test-deploy/.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
	echo "test-deploy: installing Debian's ${missing[*]} with apt-get (needed by the deployment tests)" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-deploy: run as root, or install first: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

export GOTOOLCHAIN=local
mkdir -p out/test-deploy
PTOPOFL_TEST_DEPLOY=1 PTOPOFL_TEST_OUT="$PWD/out/test-deploy" exec go test -count=1 -timeout 15m -v \
	-run '^(TestParseGuide|TestDeployGuide|TestDeployPostgres|TestReportInBrowser|TestComposeConfig)$' ./e2e/
