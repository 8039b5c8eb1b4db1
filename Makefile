# openib-switch — top-level entry points. Every target that needs the environment depends
# on `setup`, which is idempotent and installs everything a fresh Debian 12 machine needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV     ?= .venv
PY       := $(VENV)/bin/python
STAMP    := $(VENV)/.setup-stamp
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CONFIG   ?= default
# make fpga: which top (default ib_switch) and which ECP5 device (25k, 45k, 85k)
TOP      ?= ib_switch
DEVICE   ?= 85k
# make fpga-board: the board top's PLL clock in MHz (the switch does not close timing above
# ~10 MHz yet: docs/fpga.md)
BOARD_FREQ ?= 10
# make fpga-scale: the port counts
PORTS    ?= 4,8,16
# make gate: the simulator for the netlist
SIM      ?= icarus
# the FPGA targets default to config small (CONFIG given on the command line wins)
FPGA_CONFIG = $(if $(filter file,$(origin CONFIG)),small,$(CONFIG))
# make mutate: which block (tb/mutate.py BLOCKS) and how many mutants
BLOCK    ?= vlarb
MUTANTS  ?= 30
# make waves: which pytest item (simulator + config) and which cocotb test(s) to record
TEST     ?= tb/test_rx_parser.py::test_rx_parser[icarus-small]
TESTCASE ?= lockstep_mixed_traffic/idle=random
SIGNALS  ?=
FROM     ?= 0
TO       ?= 40

export OBJCACHE := ccache
export PATH := $(abspath $(VENV))/bin:$(PATH)
unexport VERILATOR_ROOT

# tshark, libibmad5/-dev: outside decoders of IB packets and MADs for the management tests;
# opensm, ibsim-utils, infiniband-diags, ibutils: OpenSM on ibsim and ibdmchk, the outside
# subnet manager and credit-loop checker the fabric tests compare ours with
# every Python package of the project (a folder with an __init__.py; tests/test_layers.py gives each its layer)
PY_DIRS := $(patsubst %/__init__.py,%,$(wildcard */__init__.py)) tests

APT_PKGS := iverilog g++ clang make perl ccache tshark libibmad5 libibmad-dev opensm ibsim-utils infiniband-diags ibutils lcov


.PHONY: help setup sim sim-long coverage check-sm unit mutate verilog verilog-switch bench-switch bench-fabric bench-failover bench-ar bench-cc soak bench-sm bench-sm-routing sm-scale bench-netsim bench-netsim-rtl netsim-livelock netsim-deadlock netsim-collateral netsim-resilience netsim-experiments fabric-sweep fabric-demo opensm-demo lint waves demo demo-parser bench bench-link bench-alloc formal fresh-check timing fpga fpga-blocks fpga-board fpga-scale mem-check gate report clean distclean

help:
	@echo "make setup    install the toolchain (apt + venv + pip + Verilator link); idempotent"
	@echo "make demo     set up and run the main demo: the 8-port switch (prints tables, writes VCD + Verilog)"
	@echo "make demo-parser  the receive parser alone, in the Amaranth simulator"
	@echo "make fabric-demo  12 switches + 31 endpoints in Verilator, brought up in-band by our SM; link table + PNG"
	@echo "make opensm-demo  unmodified OpenSM brings up 12 of our switches (ibsim-protocol server); ibnetdiscover, iblinkinfo, perfquery; a pcap of every MAD"
	@echo "make sim      the regression (<= 15 min on 2 cores): unit tests, every block's cocotb lock-step on Icarus and Verilator, native binaries, formal"
	@echo "make sim-long what leaves the regression's budget: the in-band RTL fabric (OpenSM's routes too), the native fabric, switch w128, the Amaranth-simulator feature lock-steps"
	@echo "make unit     only the fast Python / Amaranth-simulator tests"
	@echo "make verilog  Verilog for CONFIG=<name|file.json> into build/verilog/<config>/"
	@echo "make verilog-switch  ib_switch for 4/8/16/64 ports, linted, sizes and times"
	@echo "make lint     verilator --lint-only -Wall on the Verilog for W=64 and W=512, + ruff"
	@echo "make waves    run TEST / TESTCASE with VCD; print the path and a text table"
	@echo "make coverage code (statements, branches, toggles per Amaranth file, HTML) and functional coverage of the cocotb tests on Verilator; floors checked"
	@echo "make formal   prove the credit loop (SymbiYosys k-induction, z3)"
	@echo "make mutate   mutation testing: MUTANTS yosys mutants of BLOCK (a block, ib_switch, link_pair) against its tests (survivors listed)"
	@echo "make bench    simulator speed table (cycles/s: Icarus, Verilator, model)"
	@echo "make bench-switch switch latency, accepted vs offered load (tables + PNG), simulator speed"
	@echo "make bench-link  link utilisation vs buffer size vs wire delay"
	@echo "make bench-alloc accepted vs offered load: iSLIP VOQ vs FIFO input queueing"
	@echo "make bench-fabric the RTL fabric's simulation speed, native Verilator (THREADS=1,2): cycles/s idle and under traffic"
	@echo "make bench-failover failover in the RTL fabric (RADIX=4,8, LOS=0,64,1024 cycles, RUNS=50 cuts each): min/median/max"
	@echo "make bench-ar effective bisection of an RTL fat tree: static, adaptive, flow-pinned (PERMS=20): mean, 95% CI, raw and in order"
	@echo "make bench-cc the hotspot on the 8-port switch RTL with and without congestion control (IBA Annex A10)"
	@echo "make soak     the fault-injection soak: 5 seeds x 10^7 packets through the switch under random faults (native Verilator), exact books"
	@echo "make bench-sm our SM's routing engines beside OpenSM's (ibsim) on fat trees K=16,24,32: time, memory, balance, CDG"
	@echo "make check-sm our CDG checker beside ibdmchk on every engine and AR plan, scope by scope (docs/routing-checks.md)"
	@echo "make sm-scale our SM routes + checks a radix-SCALE_K (default 80: 128,000 hosts) 3-level fat tree"
	@echo "make bench-netsim the fabric simulator at scale (NETSIM_RUNS=htsim-ib,htsim-pfc,scale-ib): wall, peak memory, events/s"
	@echo "make bench-netsim-rtl  the simulator against the RTL fat_tree_2(8), packet by packet (RTL_COUNT, RTL_SEEDS): table + PNG"
	@echo "make netsim-experiments  published results on the fabric simulator, tables + PNG into docs/netsim/ (netsim-livelock, netsim-deadlock, netsim-collateral, netsim-resilience)"
	@echo "make fabric-sweep load x flow control x routing sweep of the fabric simulator on Dask (SWEEP_ARGS=--scheduler ADDR for an existing cluster): table + PNG"
	@echo "make timing   every block's longest path in LUT levels (synth_ecp5) against hw/timing_budget.json (also in make sim)"
	@echo "make fpga     synthesis + place and route on ECP5 (CONFIG, TOP, DEVICE): LUT/FF/BRAM/Fmax table"
	@echo "make fpga-blocks  every block out of context on ECP5, one table"
	@echo "make fpga-board   the ULX3S board top (switch + endpoints, LEDs, UART) to a bitstream (BOARD_FREQ)"
	@echo "make fpga-scale   ib_switch synthesized at PORTS (default 4,8,16), config small otherwise: size table"
	@echo "make mem-check every memory of ib_switch with its read ports (synchronous or not)"
	@echo "make gate     gate-level: the synthesized ib_switch netlist runs the switch traffic tests (SIM=icarus|verilator)"
	@echo "make report   latency budget in ns: measured core cycles x FPGA Fmax / ASIC clock, + PHY shares (table + PNG)"
	@echo "make fresh-check  (root) the README's two commands on a new minimal Debian 12 root (debootstrap)"
	@echo "make clean    remove build outputs"

setup: $(STAMP)

$(STAMP): pyproject.toml tools/setup.sh Makefile
	bash tools/setup.sh "$(VENV)" $(APT_PKGS)
	touch $@

sim: setup
	rm -rf build/results
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q --durations=20 --junitxml=build/pytest-sim.xml -m "not long and not gate" tests tb; rc=$$?; \
	  $(PY) -m verif.summary build/results || rc=1; exit $$rc

sim-long: setup
	rm -rf build/results
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q --durations=20 -m long tests tb; rc=$$?; \
	  $(PY) -m verif.summary build/results || rc=1; exit $$rc

# The cocotb tests at the configs the coverage figures are for (small, small-rxreg; COV_CONFIGS)
# on Verilator with code coverage and the functional coverage model sampled, then the reports:
# a table per Amaranth file, the holes, the HTML (build/coverage/html), the floors of
# verif/coverage_floors.json checked; every functional bin (verif/ib_funcov.py) hit.
# (tb/test_opensm_rtl.py left out: OpenSM's tools time out in real time, and the coverage
# build runs its fabric too slowly for them; its switch is the one the other tests cover)
COV_CONFIGS ?= small,small-rxreg
COV_SKIP = not opensm_rtl and not w128 and not w256 and not w512 and not msb and not ext and not novcrc
coverage: setup
	rm -rf build/coverage
	@t0=$$(date +%s); \
	RTL_COVERAGE=1 $(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m "not long and not gate" \
	  -k "verilator and $(COV_SKIP)" tb; rc=$$?; \
	  $(PY) -m verif.coverage build/coverage --configs $(COV_CONFIGS) --html build/coverage/html \
	    --check verif/coverage_floors.json || rc=1; \
	  $(PY) -m verif.funcov build/coverage --configs $(COV_CONFIGS) --check || rc=1; \
	  echo "make coverage: $$(( $$(date +%s) - t0 )) s"; exit $$rc

unit: setup
	$(PY) -m pytest -n $(JOBS) -q -m "not long and not gate" tests

verilog: setup
	$(PY) -m hw.verilog --config $(CONFIG) --out build/verilog

verilog-switch: setup
	$(PY) -m tools.verilog_switch

lint: setup
	$(PY) -m tools.lint
	$(VENV)/bin/ruff check $(PY_DIRS)

waves: setup
	WAVES=1 TESTCASE="$(TESTCASE)" $(PY) -m pytest -q -p no:xdist "$(TEST)"
	$(PY) -m verif.waves --latest --from $(FROM) --to $(TO) $(if $(SIGNALS),--signals $(SIGNALS))

demo: setup
	$(PY) -m demos.switch --config $(CONFIG)

fabric-demo: setup
	$(PY) -m demos.fabric

opensm-demo: setup
	$(PY) -m demos.opensm

demo-parser: setup
	$(PY) -m demos.parser --config $(CONFIG)

bench: setup
	$(PY) -m bench.switch
	$(PY) -m bench.sim_speed
	$(PY) -m bench.link
	$(PY) -m bench.alloc

bench-switch: setup
	$(PY) -m bench.switch

bench-link: setup
	$(PY) -m bench.link

# make bench-fabric: Verilator --threads values to build the fabric with
THREADS  ?= 1,2
bench-fabric: setup
	$(PY) -m bench.fabric --threads $(THREADS)

# make bench-failover: fat_tree_2 radixes, loss-of-signal times (cycles), cuts per pair
RADIX    ?= 4,8
LOS      ?= 0,64,1024
RUNS     ?= 50
bench-failover: setup
	$(PY) -m bench.failover --radix $(RADIX) --los $(LOS) --runs $(RUNS)

PERMS ?= 20
bench-ar: setup
	$(PY) -m bench.ar --perms $(PERMS)

bench-cc: setup
	$(PY) -m bench.cc

# make soak: packets per seed, a fault every 2^SOAK_RATE cycles on average, how many seeds
SOAK_PACKETS ?= 10000000
SOAK_RATE    ?= 10
SOAK_SEEDS   ?= 5
soak: setup
	$(PY) -m bench.soak --packets $(SOAK_PACKETS) --rate-log2 $(SOAK_RATE) --seeds $(SOAK_SEEDS)

# make bench-sm: our SM and OpenSM bring up the same 3-level fat trees of radix K over the
# same ibsim-protocol server (docs/opensm.md); make bench-sm-routing: the routing engines
# alone, ours offline beside OpenSM's on ibsim
K        ?= 16,24,32
SM_ENGINES ?= ftree
ENGINES  ?= ftree,minhop,updn
bench-sm: setup
	$(PY) -m bench.sm_served --k $(K) --engines $(SM_ENGINES)

bench-sm-routing: setup
	$(PY) -m bench.sm --k $(K) --engines $(ENGINES)

# make sm-scale: our SM alone on a 3-level fat tree of radix SCALE_K (80: 128,000 hosts)
SCALE_K  ?= 80
sm-scale: setup
	$(PY) -m sm.offline --gen ft3:$(SCALE_K) --engine ftree --check

# the fabric simulator (docs/netsim.md)
NETSIM_RUNS ?= htsim-ib,htsim-pfc
NETSIM_REPEATS ?= 3
bench-netsim: setup
	$(PY) -m bench.netsim --runs $(NETSIM_RUNS) --repeats $(NETSIM_REPEATS)

# make bench-netsim-rtl: the simulator against the RTL fat_tree_2(8), packet by packet
RTL_COUNT ?= 200
RTL_SEEDS ?= 3
bench-netsim-rtl: setup
	$(PY) -m bench.netsim_rtl --count $(RTL_COUNT) --seeds $(RTL_SEEDS)

netsim-livelock: setup
	$(PY) -m netsim.experiments livelock

netsim-deadlock: setup
	$(PY) -m netsim.experiments deadlock

netsim-collateral: setup
	$(PY) -m netsim.experiments collateral

netsim-resilience: setup
	$(PY) -m netsim.experiments resilience

# SWEEP_ARGS: e.g. --scheduler tcp://host:8786 (an existing Dask cluster), --loads 0.2,0.8
SWEEP_ARGS ?=
fabric-sweep: setup
	$(PY) -m netsim.sweep --out docs/netsim $(SWEEP_ARGS)

netsim-experiments: setup
	$(PY) -m netsim.experiments all

# make check-sm: our CDG checker beside ibdmchk, scope by scope, every engine and AR plan
check-sm: setup
	$(PY) -m tools.check_sm

bench-alloc: setup
	$(PY) -m bench.alloc

formal: setup
	$(PY) -m formal.credit_proof

mutate: setup
	$(PY) -m tb.mutate --block $(BLOCK) -n $(MUTANTS) --sim $(SIM)

# the longest path of every block in LUT levels (synth_ecp5, no place and route) against
# hw/timing_budget.json (docs/fpga.md, "Timing check"); also in `make sim`
timing: setup
	$(PY) -m tools.timing --config $(FPGA_CONFIG) --check

fpga: setup
	$(PY) -m tools.fpga --config $(FPGA_CONFIG) --top $(TOP) --device $(DEVICE)

fpga-blocks: setup
	$(PY) -m tools.fpga --config $(FPGA_CONFIG) --blocks --device $(DEVICE)

fpga-board: setup
	$(PY) -m tools.fpga --config $(FPGA_CONFIG) --board ulx3s --board-freq $(BOARD_FREQ)

fpga-scale: setup
	$(PY) -m tools.fpga --config $(FPGA_CONFIG) --ports $(PORTS) --no-pnr

mem-check: setup
	$(PY) -m tools.mem_check --config $(FPGA_CONFIG)

gate: setup
	$(PY) -m pytest -q -p no:xdist -s -m gate tb/test_gate.py --gate-config $(FPGA_CONFIG) --gate-sim $(SIM)

report: setup
	$(PY) -m tools.report

fresh-check:
	bash tools/fresh_check.sh

clean:
	@if findmnt -rn -o TARGET | grep -q "^$$(pwd)/build/"; then echo "make clean: something is mounted under build/ (a fresh-check root?): umount it first" >&2; exit 1; fi
	rm -rf --one-file-system build sim_build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
