# galactic: split SRv6 data plane for Kubernetes.
#
# One make builds everything. Each directory contributes a fragment
# (<dir>/module.mk) that declares its programs, libraries and tests through the
# macros in mk/rules.mk; this file only wires the top-level targets.
#
# Two build variants share the sources:
#   build/rel  release binaries (-O2)           -> make / make all
#   build/san  ASan+UBSan binaries for tests     -> make test-unit etc.

.DEFAULT_GOAL := all
SHELL := /bin/bash

include mk/rules.mk
include $(sort $(wildcard */module.mk */*/module.mk */*/*/module.mk))

.PHONY: all deps controlplane test test-unit test-netns test-e2e bench demo fuzz lint test-runner clean preflight images

all: $(ALL_REL)

# Idempotent: apt packages, then the test control plane (cached outside the repo).
deps:
	./mk/deps.sh

controlplane:
	./tests/controlplane/build.sh

# How long `make test` runs each fuzzer (a smoke run over 15 targets, 2 min;
# `make fuzz` alone: 60 s each).
TEST_FUZZ_SECONDS ?= 8

# Every suite; the runner prints one 'N passed, N failed, N skipped' line per
# suite and a total, and fails if any suite failed.
# Every suite runs even when an earlier one failed; the summary fails if any
# failed or did not run (tests/run-suites.sh says how it cannot be fooled).
test: deps
	$(MAKE) all
	./tests/run-suites.sh --begin
	-$(MAKE) test-runner
	-$(MAKE) test-unit
	-$(MAKE) test-netns
	-$(MAKE) test-e2e
	-$(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)
	-$(MAKE) lint
	./tests/run-suites.sh --summary runner unit netns e2e fuzz lint

# The runner fails what proves nothing: an undeclared skip, a binary that runs
# no test or fewer than it registers, a hang (tests/runner-selftest.sh).
test-runner: $(SELFTEST_CHECKS)
	./tests/runner-selftest.sh

test-unit: $(UNIT_TESTS)
	./tests/run-suites.sh unit $(UNIT_TESTS)

# Kernel and e2e suites run the daemons both as shipped (build/rel) and
# sanitized (build/san).
test-netns: all $(ALL_SAN) $(NETNS_TESTS)
	./tests/run-suites.sh netns $(NETNS_TESTS)

test-e2e: all $(ALL_SAN) $(E2E_TESTS) images
	./tests/run-suites.sh e2e $(E2E_TESTS)

# OCI images of the daemons, from the release binaries (mk/images.sh,
# docs/install.md "Images"); rebuilt only when a binary or the script changes.
IMAGES := build/images/galactic-agent/index.json build/images/galactic-translator/index.json
images: $(IMAGES)
build/images/galactic-agent/index.json: mk/images.sh common/version.h build/rel/bin/galactic-agent \
		build/rel/bin/galactic-cni build/rel/bin/galactic-cni-install
	./mk/images.sh agent
build/images/galactic-translator/index.json: mk/images.sh common/version.h build/rel/bin/galactic-translator
	./mk/images.sh translator

bench: all $(BENCHES)
	./tests/run-benches.sh $(BENCHES)

fuzz: $(FUZZERS)
	./tests/run-fuzz.sh $(FUZZERS)

# Static checks (mk/lint.sh): cppcheck, shellcheck, yamllint, helm lint --strict.
lint:
	./mk/lint.sh

demo: deps all
	./tests/demo/demo.sh

preflight: build/rel/bin/galactic-preflight
	build/rel/bin/galactic-preflight

clean:
	rm -rf build
