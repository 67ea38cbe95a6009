# Developer entry points; every target runs scripts/test.sh (the same code path CI uses through .ci/run).
SHELL := /bin/bash
TEST := scripts/test.sh

.PHONY: test demo demo-reference venv sanity units lint integration molecule reference clean

## make test: every stage (sanity, units, lint, integration, molecule) and the summary line
test:
	@$(TEST)

## make demo: a real rollout on the embedded sandbox (6 nodes, 3 AZs, sample workload): plan, upgrade, report
demo:
	@scripts/demo.sh

## make demo-reference: the same demo on the real kube-apiserver, controllers and scheduler (built on first use)
demo-reference:
	@DEMO_KUBE=reference scripts/demo.sh

## make venv: create or reuse .venv, write the ansible-test pip bootstrap, lay the collection out under .build/
venv:
	@$(TEST) venv

sanity:
	@$(TEST) sanity

units:
	@$(TEST) units

lint:
	@$(TEST) lint

integration:
	@$(TEST) integration

molecule:
	@$(TEST) molecule

reference:
	@$(TEST) reference

## make clean: remove the collection layouts and test results (keeps .venv)
clean:
	rm -rf .build
