# Makefile - build, test, install and benchmark dtrain (see README.md).
#
#   make            every tool into build/bin/
#   make test       Debian packages if missing, ASan+UBSan build, the whole test suite (make tsan too)
#   make tsan       the threaded tests under ThreadSanitizer
#   make demo       Debian packages if missing, build, a small local run
#   make bench      benchmarks against their peers (never part of make test)
#   make fuzz       libFuzzer on the parsers for FUZZ_TIME seconds (clang)
#   make gpu-bundle what a GPU machine needs to run the CUDA tests and GPU benchmark (.device/);
#                   BASELINE=FILE adds an earlier dtrain-train for the benchmark to run beside
#   make install PREFIX=/opt/dtrain   the tools, the Slurm scripts (share/dtrain/sbatch, bin/dtrain-sweep)
#                   and a man page each (help2man)

PREFIX ?= /usr/local
BUILD ?= build
FUZZ_TIME ?= 60

CC ?= cc
CFLAGS ?= -O2 -g
# One set of warnings for every compiler the build runs (gcc, clang for the fuzzers, nvcc's host
# compiler). One include path, the repository's root: every project include names its folder
# (#include "trainer/loop/run.h"), and tests/include_check.sh holds them to docs/architecture.md.
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wformat=2
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null)
DT_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARNINGS) $(CFLAGS) -MMD -MP -I. $(MPI_CFLAGS)
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# The GPU backend (cuDNN, cuBLAS, NCCL): built whenever nvcc is found; `make CUDA=0` leaves it out
# (then --device cuda says so). Only the trainer links it; the launcher never does.
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
CUDA ?= $(if $(NVCC),1,0)
NVCC_FLAGS := -std=c++17 -O3 -Xcompiler -Wall,-Wextra,-Werror,-Wshadow -I. \
              -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
GPU_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublasLt -lcublas -lnccl -lcudart -lstdc++

# Sources are found, never listed. Every .c (and the trainer's .cu) of these folders is library
# code, except a tool's main: the file dtrain.c or dtrain_NAME.c is the tool dtrain[-NAME]
# (docs/architecture.md). GPU-only files are *.cu and *_nccl.c; *_none.c stands in without CUDA.
SRC_DIRS := common topology launcher formats analysis probe trainer
FOUND := $(sort $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c $(d)/*/*.c $(d)/*/*.cu)))
MAINS := $(foreach f,$(FOUND),$(if $(filter dtrain.c dtrain_%.c,$(notdir $(f))),$(f)))
TOOLS := $(subst _,-,$(basename $(notdir $(MAINS))))
main_of = $(filter %/$(subst -,_,$(1)).c,$(MAINS))
GPU_ONLY := $(filter %.cu %_nccl.c,$(FOUND))
GPU_STANDIN := $(filter %_none.c,$(FOUND))
NO_GPU_LIB := $(filter-out $(MAINS) $(GPU_ONLY),$(FOUND))
ifeq ($(CUDA),1)
LIB_SRC := $(filter-out $(MAINS) $(GPU_STANDIN),$(FOUND))
else
LIB_SRC := $(NO_GPU_LIB)
GPU_LIBS :=
endif
# Every program links every library it might need; --as-needed keeps only those it uses (so the
# launcher, which uses no MPI or CUDA, loads neither: tests/shape_check.sh checks).
LIBS := -Wl,--as-needed -ljansson -lhwloc -ldnnl -lopenblas -fopenmp -lm -lz -lpthread $(MPI_LIBS) $(GPU_LIBS)

# Tests: every tests/test_*.c is a cmocka program, every tests/*_check.c a program the tests run
# under mpirun (comm_check: test_mpi's); the other files of tests/ are their helpers.
# tests/fuzz/fuzz_NAME.c is a libFuzzer target and, with tests/fuzz/replay.c, the corpus replayer
# test_fuzz_NAME.
MPI_CHECKS := $(patsubst tests/%.c,%,$(wildcard tests/*_check.c))
TEST_MAINS := $(wildcard tests/test_*.c) $(addprefix tests/,$(addsuffix .c,$(MPI_CHECKS)))
TEST_HELPERS := $(filter-out $(TEST_MAINS),$(wildcard tests/*.c))
FUZZERS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
TESTS := $(basename $(notdir $(wildcard tests/test_*.c))) $(addprefix test_fuzz_,$(FUZZERS))

BIN := $(BUILD)/bin
TBIN := $(BUILD)/test/bin
TSBIN := $(BUILD)/tsan/bin
obj = $(patsubst %.cu,$(1)/%.o,$(patsubst %.c,$(1)/%.o,$(2)))

.PHONY: all test test-build tsan golden man cluster-test cluster-demo methods-demo methods-study demo bench \
        bench-analyze bench-seq bench-methods blind gpu-bundle fuzz install deps clean
all: $(addprefix $(BIN)/,$(TOOLS))

# Object trees, each with its own sanitizers and programs: release ($(BUILD)/obj, programs in
# bin/), ASan+UBSan for the tests (test/), ThreadSanitizer for the threaded tests (tsan/), and
# clang's for the fuzzers (fuzz/). Each folds its library code into one archive, from which the
# linker takes only what a program uses.
TSAN := -fsanitize=thread -fno-omit-frame-pointer
# tree_rules DIR SANITIZERS BINDIR: the gcc object tree DIR and its programs in BINDIR
define tree_rules
$(1)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $$(HOT) $(2) -c $$< -o $$@
$(1)/libdtrain.a: $(call obj,$(1),$(LIB_SRC))
$(1)/libtests.a: $(call obj,$(1),$(TEST_HELPERS))
$(3)/%: $(1)/tests/%.o $(1)/libtests.a $(1)/libdtrain.a
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $(2) $$^ -o $$@ -lcmocka $(LIBS)
$(3)/test_fuzz_%: $(1)/tests/fuzz/fuzz_%.o $(1)/tests/fuzz/replay.o $(1)/libdtrain.a
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $(2) $$^ -o $$@ $(LIBS)
# The trainer's kernels: GCC 12's -O2 vectorises only loops that need no alias check, and
# errno-setting sqrtf never; its elementwise loops run 4-8x faster with these.
$(1)/trainer/%.o: HOT := -O3 -fno-math-errno
$(1)/trainer/backend/seq_fast.o: HOT := -O3 -fno-math-errno -fopenmp
$(1)/trainer/backend/seq_gelu.o: HOT := -O3 -ffast-math -fopenmp
$(1)/probe/dtrain_commbench.o: HOT := -O3
$(call obj,$(1),$(filter %_nccl.c,$(GPU_ONLY))): HOT := -O3 -I$(CUDA_HOME)/include
# Device code is nvcc's, without sanitizers (they cannot see into kernels): one object serves all.
$(if $(filter $(BUILD)/obj,$(1)),,$(call obj,$(1),$(filter %.cu,$(LIB_SRC))): $(1)/%.o: $(BUILD)/obj/%.o
	@mkdir -p $$(dir $$@)
	cp $$< $$@)
endef
# tool_rule TOOL DIR SANITIZERS BINDIR: the tool, its main and the archive of tree DIR
define tool_rule
$(4)/$(1): $(call obj,$(2),$(call main_of,$(1))) $(2)/libdtrain.a
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $(3) $$^ -o $$@ $(LIBS)
endef
$(eval $(call tree_rules,$(BUILD)/obj,,$(BIN)))
$(eval $(call tree_rules,$(BUILD)/test/obj,$(SANITIZE),$(TBIN)))
$(eval $(call tree_rules,$(BUILD)/tsan/obj,$(TSAN),$(TSBIN)))
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t),$(BUILD)/obj,,$(BIN))))
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t),$(BUILD)/test/obj,$(SANITIZE),$(TBIN))))
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t),$(BUILD)/tsan/obj,$(TSAN),$(TSBIN))))
$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE $(WARNINGS) -g -O1 -MMD -MP -I. $(MPI_CFLAGS) \
	    -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
$(BUILD)/fuzz/obj/libdtrain.a: $(call obj,$(BUILD)/fuzz/obj,$(NO_GPU_LIB))
%.a:
	@rm -f $@
	ar rcs $@ $^
# A program's main object is an intermediate of its pattern rule: kept, so nothing rebuilds twice.
.SECONDARY:

deps:
	@sh deps/install.sh

# The suite runs the sanitized tools and a short libFuzzer run (clang, from make deps), then the
# threaded tests under ThreadSanitizer, the install, the project's shape and the cluster.
test: deps
	@$(MAKE) --no-print-directory test-build
	@if command -v clang >/dev/null; then $(MAKE) --no-print-directory $(addprefix $(BUILD)/fuzz/fuzz_,$(FUZZERS)); fi
	@FUZZ_TIME=15 FUZZERS="$(FUZZERS)" sh tests/run.sh $(TBIN) $(TESTS)
	@$(MAKE) --no-print-directory tsan
	@sh tests/install_check.sh
	@sh tests/shape_check.sh $(BIN)
	@$(MAKE) --no-print-directory cluster-test

# ThreadSanitizer over the tests that run the project's own threads: the loader, the communication
# thread and staging under every exchange method (test_train, test_train_exchange: two ranks in
# one process), the methods across 2-4 real ranks (test_mpi) and the watchdog (test_mpi_jobs).
# Open MPI is not instrumented: its locks seen from inside it are not reported (tests/tsan.supp).
TSAN_TESTS := test_comm_thread test_train test_train_exchange test_mpi test_mpi_jobs
tsan: $(addprefix $(TSBIN)/,$(TOOLS) $(TSAN_TESTS) $(MPI_CHECKS))
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" FUZZERS= \
	    sh tests/run.sh $(TSBIN) $(TSAN_TESTS)

# End to end on a real Slurm cluster this machine starts and stops (tests/cluster/); the jobs run
# the optimised tools (the sanitized ones would report Open MPI's own leaks). Every srun and job
# wait in it has its own bound; the whole is bounded too (SIGTERM brings the cluster down first).
cluster-test: all
	@timeout -k 60 2400 sh tests/cluster/test_cluster.sh $(BIN)

cluster-demo: deps all
	@sh tests/cluster/demo.sh $(BIN)

test-build: $(addprefix $(TBIN)/,$(TOOLS) $(TESTS) $(MPI_CHECKS))

# Rewrites tests/golden/ from what the tools print now: run it when an output changes on purpose,
# then review the diff (git diff tests/golden) as part of the change.
golden: test-build
	@DTRAIN_UPDATE_GOLDEN=1 sh tests/run.sh $(TBIN) test_golden >/dev/null; git --no-pager diff --stat -- tests/golden

# For a GPU machine that lacks this one's packages: dtrain-train, the CUDA tests (optimised, no
# sanitizers) and every library they load but the GPU's own, in .device/bundle.tar.xz; the
# device runs bench/gpu_device_run.sh from it (README.md, Benchmarks).
$(BUILD)/gpu/%: $(BUILD)/obj/tests/%.o $(BUILD)/obj/libtests.a $(BUILD)/obj/libdtrain.a
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $^ -o $@ -lcmocka $(LIBS)

GPU_TESTS := $(patsubst tests/%.c,$(BUILD)/gpu/%,$(wildcard tests/test_cuda*.c))
gpu-bundle: all $(GPU_TESTS)
	@BASELINE="$(BASELINE)" sh bench/gpu_bundle.sh $(BUILD) .device

demo: deps
	@$(MAKE) --no-print-directory all
	@sh tests/demo.sh $(BIN)

# Benchmarks need the PyTorch peer too (deps/bench-packages.txt), which make test never installs.
bench: deps
	@sh deps/install.sh deps/bench-packages.txt
	@$(MAKE) --no-print-directory all $(BUILD)/bench/launch_overhead $(BUILD)/bench/conv_layers $(BUILD)/bench/sgemm_peak
	@$(BUILD)/bench/launch_overhead $(BIN)/dtrain
	@echo
	@taskset -c 0 $(BUILD)/bench/sgemm_peak | tee $(BUILD)/bench/peak.txt
	@echo
	@taskset -c 0 $(BUILD)/bench/conv_layers
	@echo
	@PEAK=$$(sed -n 's/.*: \([0-9.]*\) GFLOP.*/\1/p' $(BUILD)/bench/peak.txt) sh bench/train_vs_torch.sh $(BIN) 1
	@echo
	@sh bench/seq_vs_torch.sh $(BIN)
	@echo
	@sh bench/seq_accuracy.sh $(BIN)
	@echo
	@sh bench/ddp_vs_mpi.sh $(BIN) mlp lenet cnn
	@echo
	@sh bench/commbench_vs_mpi.sh $(BIN) 2
	@echo
	@sh bench/analyze_corpus.sh $(BIN) $(BUILD)/bench/corpus
	@echo
	@sh bench/records_memory.sh $(BIN)
	@echo
	@sh bench/watch_cost.sh $(BIN)

# The reference method comparison (seven methods) on the test cluster, shaped links (root; ~15 min):
# every exchange method at 2 and 4 workers, 1 and 10 Gbit/s between the leaves.
bench-methods: deps all
	@sh bench/methods_shaped.sh $(BIN) $(BUILD)/bench-methods

# The cost model held against runs it never saw (bench/blind.sh; root, about 12 minutes a setting):
# each setting of bench/blind-grid.txt predicted from the measured links alone and saved, then run,
# then compared; the tuning half and the checking half summed apart. HALVES= and SETTINGS= pick.
blind: deps all
	@sh bench/blind.sh $(BIN) $(BUILD)/blind

# The reference method comparison, small and emulated, end to end: table, prediction, plot (bench/methods_demo.sh).
methods-demo: deps all
	@sh bench/methods_demo.sh $(BIN) $(BUILD)/methods-demo

# The reference scaling experiments emulated on the test cluster, each cell predicted beside measured
# (bench/methods_study.sh: ResNet-50 at 1-16 ranks over 10 Gbit/s and a fast link, BERT-Base,
# the ResNet-18/101 experiment's 1 Gbit/s shape; root, about three hours; PARTS= picks).
methods-study: deps all
	@sh bench/methods_study.sh $(BIN) $(BUILD)/methods-study

# The language models against PyTorch alone (transformer and bert-base, 1 and 2 threads).
bench-seq: deps
	@sh deps/install.sh deps/bench-packages.txt
	@$(MAKE) --no-print-directory all
	@sh bench/seq_vs_torch.sh $(BIN)

# The analyzer's part of make bench alone: a 10,000-run study (~575 MB) parsed into tables.
bench-analyze: deps
	@sh deps/install.sh deps/bench-packages.txt
	@$(MAKE) --no-print-directory all
	@sh bench/analyze_corpus.sh $(BIN) $(BUILD)/bench/corpus

$(BUILD)/bench/launch_overhead: bench/launch_overhead.c
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $< -o $@

$(BUILD)/bench/sgemm_peak: bench/sgemm_peak.c
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $< -o $@ -lopenblas

$(BUILD)/bench/conv_layers: $(BUILD)/obj/bench/conv_layers.o $(BUILD)/obj/libdtrain.a
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $^ -o $@ $(LIBS)

# libFuzzer targets, one per tests/fuzz/fuzz_NAME.c; they need clang. The same sources also build
# with gcc as corpus replayers (test_fuzz_NAME), so every sanitized run replays the corpora.
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/obj/tests/fuzz/fuzz_%.o $(BUILD)/fuzz/obj/libdtrain.a
	@mkdir -p $(dir $@)
	clang -fsanitize=fuzzer,address,undefined $^ -o $@ $(filter-out -fopenmp,$(LIBS))

fuzz: $(addprefix $(BUILD)/fuzz/fuzz_,$(FUZZERS))
	@for f in $(FUZZERS); do mkdir -p $(BUILD)/fuzz/corpus-$$f; \
	    $(BUILD)/fuzz/fuzz_$$f -max_total_time=$(FUZZ_TIME) -max_len=4096 -print_final_stats=1 \
	        $(BUILD)/fuzz/corpus-$$f tests/fuzz/corpus/$$f 2>&1 | tail -n 3; done

# A man page per tool, made by help2man from the tool's own --help and --version, so that the
# two never drift apart; the NAME line of each is below.
dtrain_WHAT := launch a program on the GPUs, NIC and cores Slurm gave this rank
dtrain-hostlist_WHAT := expand, fold and count Slurm hostlists
dtrain-rankinfo_WHAT := print what a rank was given by dtrain and where it runs
dtrain-topo_WHAT := show a node's GPUs, NICs and NUMA nodes and how near they are
dtrain-train_WHAT := train a model, data-parallel over MPI ranks, on CPUs or GPUs
dtrain-commbench_WHAT := time the gradient transports over message sizes, as nccl-tests does
dtrain-check_WHAT := check a job's nodes before it runs: GPUs, NIC, run directory and every link
dtrain-analyze_WHAT := turn run records, logs and result tables into tables, plots and audits
dtrain-record_WHAT := write the run record of a program dtrain-train did not train
dtrain-sweep_WHAT := submit a scaling study to Slurm and average its runs into one speedup table
dtrain.sbatch_WHAT := the Slurm job script of one data-parallel training run, of dtrain-train or your program
MAN := $(addprefix $(BUILD)/man/,$(addsuffix .1,$(TOOLS)))
$(BUILD)/man/%.1: $(BIN)/%
	@mkdir -p $(dir $@)
	help2man --no-info --no-discard-stderr --name="$($*_WHAT)" --output=$@.tmp $< && mv $@.tmp $@
# The Slurm scripts (sbatch/, installed under share/dtrain/sbatch, sweep as bin/dtrain-sweep): their
# pages from their --help too, under the names they are run by, the version dtrain's.
VERSION := $(shell sed -n 's/.*DTRAIN_VERSION "\(.*\)"/\1/p' common/version.h)
SCRIPT_MAN := $(BUILD)/man/dtrain-sweep.1 $(BUILD)/man/dtrain.sbatch.1
$(BUILD)/man/dtrain-sweep.1: sbatch/sweep
$(BUILD)/man/dtrain.sbatch.1: sbatch/dtrain.sbatch
$(SCRIPT_MAN):
	@mkdir -p $(dir $@)
	ln -sf $(abspath $<) $(@:.1=)
	env -u SLURM_JOB_ID help2man --no-info --version-string=$(VERSION) --name="$($(notdir $(@:.1=))_WHAT)" \
	    --output=$@.tmp $(@:.1=) && mv $@.tmp $@ && rm -f $(@:.1=)
man: $(MAN) $(SCRIPT_MAN)

install: all man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/dtrain/sbatch
	install -m 755 $(addprefix $(BIN)/,$(TOOLS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 sbatch/sweep sbatch/dtrain.sbatch $(DESTDIR)$(PREFIX)/share/dtrain/sbatch/
	ln -sf ../share/dtrain/sbatch/sweep $(DESTDIR)$(PREFIX)/bin/dtrain-sweep
	install -m 644 $(MAN) $(SCRIPT_MAN) $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
