# ptopofl build, test and benchmark targets. Every target works on a fresh
# clone with only Go (and apt for the benchmark reference tools).
GO       ?= go
BIN      := bin
export GOTOOLCHAIN := local

.PHONY: all build run test reference console-screenshots test-faults test-deploy bench bench-tda bench-pipeline bench-secagg bench-search bench-trainers bench-deep bench-deep-anchor fashion-mnist lint fmt clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# run: the main job on the embedded default.
run: build
	./scripts/run.sh

test: build
	$(GO) vet ./...
	./tools/workflowcheck/run.sh ./workflows/...
	$(GO) test -count=1 -timeout 25m ./...

# reference: regenerate docs/reference/ (every starter command's flags and
# every hyper-parameter, from the code); make test fails when it is stale.
reference:
	PTOPOFL_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestReferenceIsCurrent ./cmd/starter/
	PTOPOFL_UPDATE_REFERENCE=1 $(GO) test -count=1 -run TestCommandsReference ./docs/

# console-screenshots: the campaign console's pages as docs/how-to/console.md
# shows them, made by its browser test (e2e/console_test.go, Debian's
# chromium) and copied into docs/images/console/.
console-screenshots: build
	rm -rf out/console-screenshots
	PTOPOFL_TEST_OUT=$(CURDIR)/out/console-screenshots $(GO) test -count=1 -run '^TestConsoleInBrowser$$' ./e2e/
	mkdir -p docs/images/console
	cp out/console-screenshots/TestConsoleInBrowser/console-*.png docs/images/console/

# test-deploy: the deployment path (e2e/deploy_test.go): Temporal on
# Debian's PostgreSQL (installed here if missing) with every component a
# separate process, killed and restarted mid-campaign.
test-deploy: build
	./scripts/test-deploy.sh

# test-faults: the real binaries through outages and faults (e2e, built
# with -tags faults): S3 down 60 s mid-round, Temporal down 60 s mid-round,
# a straggler site, a 200-site, 20-round campaign with 5 % of site
# activity attempts failing, and sites' own training programs killed (a
# worker, a serve-mode program) and kept from the worker's secrets, and
# kill -9 of a site worker, the server worker and the devstack during each
# stage of a secagg+ campaign (resumed manifests byte-identical).
# Minutes, not seconds; CI runs it after test.
test-faults:
	$(GO) vet -tags faults ./e2e/
	$(GO) test -tags faults -count=1 -timeout 75m -v -run '^(TestOutageS3|TestOutageTemporal|TestStraggler|TestRandomFaults200|TestTrainerWorkerKilled|TestTrainerServeKilled|TestTrainerEnvironmentSealed|TestCrashRecoverySecAgg)$$' ./e2e/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./tda/... ./aggregation/... ./eval/... ./learn/... ./simulate/... ./nn/...

# bench-tda times bin/tda against Debian's ripser on the same clouds.
bench-tda: build
	./scripts/bench-tda.sh

# bench-pipeline measures per-round orchestration overhead on the local
# stack and the wall time of the paper table through the pipeline.
bench-pipeline: build
	./scripts/bench-pipeline.sh

# bench-secagg: a FedAvg round's wall time and bytes written to S3 with and
# without secure_aggregation secagg+ at 8, 50 and 200 tiny sites on the
# local stack (scripts/bench-secagg.sh).
bench-secagg: build
	./scripts/bench-secagg.sh

# bench-search: adaptive sweeps against a 240-configuration grid (where
# early stopping matters) and the 48-configuration grid of issue 23, on
# three healthcare federations: replays of every strategy over 10 search
# seeds at a third and a tenth of the grid's campaign-rounds, asha against
# random paired over seeds (exact Wilcoxon), and live asha and random
# sweeps at three trials at once, which must take their replays' decisions
# (docs/results/search.md; over an hour on 2 cores).
bench-search: build
	./scripts/bench-search.sh

# bench-trainers: sites training with their own program (trainer protocol),
# per task and in serve mode, against our in-process models: the Go example
# trainer, numpy's and PyTorch's (Debian's python3-numpy and python3-torch,
# installed here if missing); also part 6 of bench-pipeline, which leaves
# the Python rows out when they are not installed.
bench-trainers: build
	@/usr/bin/python3 -c "import numpy, torch" 2>/dev/null || { apt-get update && apt-get install -y python3-numpy python3-torch; }
	./scripts/bench-trainers.sh

# bench-deep times a deep training step (ConvNet-2, MLP) of bin/nn against
# PyTorch (Debian's python3-torch, installed if missing) in the same run.
bench-deep:
	./scripts/bench-deep.sh

# bench-deep-anchor runs issue 13's PyTorch FedAvg anchor (Debian's
# python3-torch, installed if missing) on the federations `gendata
# fashion-mnist` writes for deep-small campaigns (scripts/anchor-deep.py).
bench-deep-anchor:
	./scripts/bench-deep-anchor.sh

# fashion-mnist installs Debian's Fashion-MNIST (the IDX files under
# /usr/share/datasets/fashion-mnist) that `gendata fashion-mnist` reads.
fashion-mnist:
	@dpkg -s dataset-fashion-mnist >/dev/null 2>&1 || { apt-get update && apt-get install -y dataset-fashion-mnist; }

# lint: formatting, vet, and Temporal's workflowcheck (determinism of the
# workflow code; the analyser is built from tools/workflowcheck's own module).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	./tools/workflowcheck/run.sh ./workflows/...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
