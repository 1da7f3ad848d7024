#!/usr/bin/env bash
# make test-deploy: the deployment tests (e2e/deploy_test.go). They run
# Temporal on Debian's PostgreSQL 15, which this script installs with apt if
# it is missing (the tests never install anything themselves).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
	echo "test-deploy: PostgreSQL is not installed; installing Debian's postgresql with apt-get" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-deploy: run as root, or install it first: sudo apt-get update && sudo apt-get install -y postgresql" >&2
		exit 1
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
fi

export GOTOOLCHAIN=local
PTOPOFL_TEST_DEPLOY=1 exec go test -count=1 -timeout 15m -v -run 'TestDeploy' ./e2e/
