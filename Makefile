# Makefile - build, test, install and benchmark dtrain (see README.md).
#
#   make            every tool into build/bin/
#   make test       Debian packages if missing, ASan+UBSan build, the whole test suite
#   make demo       Debian packages if missing, build, a small local run
#   make bench      benchmarks against their peers (never part of make test)
#   make fuzz       libFuzzer on the parsers for FUZZ_TIME seconds (clang)
#   make gpu-bundle what a GPU machine needs to run the CUDA tests and GPU benchmark (.device/);
#                   BASELINE=FILE adds an earlier dtrain-train for the benchmark to run beside
#   make install PREFIX=/opt/dtrain   the tools and a man page each (help2man)

PREFIX ?= /usr/local
BUILD ?= build
FUZZ_TIME ?= 60

CC ?= cc
CFLAGS ?= -O2 -g
# The trainer's folders (trainer/README.md): one per concept, each on the include path.
TRAINER_DIRS := nn backend comm exchange optim data loop
TRAINER_INC := $(addprefix -Itrainer/,$(TRAINER_DIRS))
DT_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(CFLAGS) -MMD -MP -Icommon -Ilauncher -Itopology -Ilogs -Ianalysis \
             $(TRAINER_INC)
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

COMMON_SRC := common/dt_error.c common/dt_parse.c common/hostlist.c common/duration.c common/atomic_file.c common/fault.c \
              common/timeline.c common/exchange_methods.c
LAUNCHER_SRC := launcher/alloc.c launcher/hints.c launcher/launch.c launcher/local.c launcher/plan.c
TOPOLOGY_SRC := topology/topo.c topology/topo_cache.c
ENGINE_SRC := trainer/nn/nn.c trainer/nn/ops.c trainer/nn/models.c trainer/nn/models_seq.c trainer/backend/backend_ref.c trainer/backend/backend_cpu.c \
              trainer/backend/seq_kernels.c trainer/backend/seq_fast.c trainer/backend/seq_gelu.c \
              trainer/backend/conv_direct.c trainer/backend/conv_dnnl.c
ENGINE_LIBS := -ldnnl -lopenblas -fopenmp -lm
# The GPU backend (cuDNN, cuBLAS, NCCL): built whenever nvcc is found; `make CUDA=0` leaves it out
# (then --device cuda says so). Only the trainer links it; the launcher never does.
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
CUDA ?= $(if $(NVCC),1,0)
NVCC_FLAGS := -std=c++17 -O3 -Xcompiler -Wall,-Wextra,-Werror -Icommon $(TRAINER_INC) \
              -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
ifeq ($(CUDA),1)
GPU_SRC := $(addprefix trainer/backend/,backend_cuda.cu kernels_cuda.cu blas_cuda.cu dnn_cuda.cu bn_cuda.cu bf16_cuda.cu \
                                        seq_cuda.cu staging_cuda.cu) \
           trainer/comm/comm_nccl.c
GPU_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lnccl -lcudart -lstdc++
else
GPU_SRC := trainer/backend/backend_cuda_none.c
GPU_LIBS :=
endif
# Every file of trainer/exchange/: a new method is a new file there (trainer/README.md).
EXCHANGE_SRC := $(sort $(wildcard trainer/exchange/*.c)) common/grouping.c common/partitions.c
LOOP_SRC := trainer/loop/train.c trainer/loop/run.c trainer/loop/device.c trainer/loop/restart.c \
            trainer/loop/watchdog.c trainer/loop/checkpoint.c trainer/loop/trace.c logs/profile.c \
            trainer/loop/profile_model.c trainer/loop/export.c trainer/loop/emulate.c trainer/loop/straggler.c trainer/loop/rank_status.c
TRAINER_SRC := $(ENGINE_SRC) trainer/optim/optim.c trainer/data/data.c trainer/data/text.c trainer/data/loader.c $(LOOP_SRC) \
               $(EXCHANGE_SRC) trainer/comm/comm_single.c trainer/backend/device_choice.c $(GPU_SRC) logs/log_lines.c
TRAINER_LIBS := $(ENGINE_LIBS) -lz -lpthread -ljansson $(GPU_LIBS)
# Only dtrain-train links MPI (the launcher never does, and tests of the loop use comm_single).
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null)

# tool name -> its sources
dtrain_SRC := launcher/dtrain.c $(LAUNCHER_SRC) $(TOPOLOGY_SRC) $(COMMON_SRC)
dtrain_LIBS := -lhwloc -ljansson
dtrain-hostlist_SRC := common/dtrain_hostlist.c $(COMMON_SRC)
dtrain-rankinfo_SRC := launcher/dtrain_rankinfo.c
dtrain-topo_SRC := topology/dtrain_topo.c $(TOPOLOGY_SRC) common/dt_error.c common/atomic_file.c
dtrain-topo_LIBS := -lhwloc -ljansson
dtrain-train_SRC := trainer/dtrain_train.c trainer/train_options.c trainer/run_record.c trainer/comm/comm_mpi.c logs/record.c logs/json_read.c $(TRAINER_SRC) $(COMMON_SRC)
dtrain-train_LIBS := $(TRAINER_LIBS) $(MPI_LIBS) -ljansson
dtrain-commbench_SRC := trainer/dtrain_commbench.c trainer/commbench_rounds.c trainer/comm/comm_mpi.c common/grouping.c \
                        common/partitions.c $(COMMON_SRC)
dtrain-commbench_LIBS := $(MPI_LIBS) -ljansson
dtrain-check_SRC := trainer/dtrain_check.c trainer/check_links.c trainer/comm/comm_mpi.c $(TRAINER_SRC) $(COMMON_SRC)
dtrain-check_LIBS := $(TRAINER_LIBS) $(MPI_LIBS) -ljansson
dtrain-analyze_SRC := analysis/dtrain_analyze.c analysis/command.c analysis/cmd_table.c analysis/cmd_throughput.c \
                      analysis/cmd_plot.c analysis/cmd_timeline.c analysis/cmd_audit.c analysis/cmd_nodes.c analysis/nodes.c analysis/inputs.c analysis/predict.c analysis/predict_job.c analysis/predict_compare.c analysis/links.c analysis/collectives.c analysis/costmodel.c analysis/costmodel_pieces.c analysis/costmodel_bytescheduler.c common/partitions.c logs/profile.c \
                      common/grouping.c analysis/timeline_sum.c analysis/audit.c analysis/corrected.c analysis/experiment.c logs/method_table.c analysis/speedup.c analysis/throughput.c analysis/runid.c analysis/methods.c analysis/plot.c analysis/plot_sources.c \
                      logs/table.c logs/table_columns.c logs/record.c logs/json_read.c logs/log_lines.c \
                      $(COMMON_SRC)
dtrain-analyze_LIBS := -lm -ljansson
dtrain-record_SRC := logs/dtrain_record.c logs/record.c logs/json_read.c logs/log_lines.c $(COMMON_SRC)
dtrain-record_LIBS := -lm -ljansson
TOOLS := dtrain dtrain-hostlist dtrain-rankinfo dtrain-topo dtrain-train dtrain-commbench dtrain-check dtrain-analyze dtrain-record

# test name -> its sources (cmocka)
test_hostlist_SRC := tests/test_hostlist.c tests/testutil.c $(COMMON_SRC)
test_hostlist_scontrol_SRC := tests/test_hostlist_scontrol.c tests/testutil.c $(COMMON_SRC)
test_alloc_SRC := tests/test_alloc.c tests/testutil.c $(LAUNCHER_SRC) $(TOPOLOGY_SRC) $(COMMON_SRC)
test_alloc_LIBS := -lhwloc -ljansson
test_dtrain_SRC := tests/test_dtrain.c tests/testutil.c $(COMMON_SRC)
test_dtrain_hints_SRC := tests/test_dtrain_hints.c tests/testutil.c $(COMMON_SRC)
test_dtrain_record_SRC := tests/test_dtrain_record.c tests/testutil.c $(COMMON_SRC)
test_dtrain_uneven_SRC := tests/test_dtrain_uneven.c tests/testutil.c $(COMMON_SRC)
test_topo_SRC := tests/test_topo.c tests/testutil.c logs/table.c logs/table_columns.c $(TOPOLOGY_SRC) $(COMMON_SRC)
test_topo_LIBS := -lhwloc -lm
test_plan_SRC := tests/test_plan.c tests/testutil.c logs/table.c logs/table_columns.c $(LAUNCHER_SRC) $(TOPOLOGY_SRC) $(COMMON_SRC)
test_plan_LIBS := -lhwloc -ljansson -lm
test_nn_SRC := tests/test_nn.c tests/gradcheck.c $(ENGINE_SRC) $(COMMON_SRC)
test_nn_LIBS := $(ENGINE_LIBS)
test_seq_SRC := tests/test_seq.c tests/gradcheck.c tests/testutil.c $(ENGINE_SRC) $(COMMON_SRC)
test_seq_LIBS := $(ENGINE_LIBS)
test_text_SRC := tests/test_text.c tests/testutil.c trainer/data/data.c trainer/data/text.c $(COMMON_SRC)
test_text_LIBS := -lz -lm
test_train_SRC := tests/test_train.c tests/testutil.c $(TRAINER_SRC) $(COMMON_SRC)
test_train_LIBS := $(TRAINER_LIBS) -ljansson
test_train_exchange_SRC := tests/test_train_exchange.c tests/testutil.c $(TRAINER_SRC) $(COMMON_SRC)
test_train_exchange_LIBS := $(TRAINER_LIBS) -ljansson
test_profile_SRC := tests/test_profile.c tests/testutil.c $(TRAINER_SRC) $(COMMON_SRC)
test_profile_LIBS := $(TRAINER_LIBS) -ljansson
test_cuda_SRC := tests/test_cuda.c tests/cuda_util.c tests/testutil.c $(TRAINER_SRC) $(COMMON_SRC)
test_cuda_LIBS := $(TRAINER_LIBS)
test_cuda_models_SRC := tests/test_cuda_models.c tests/cuda_util.c tests/testutil.c $(TRAINER_SRC) $(COMMON_SRC)
test_cuda_models_LIBS := $(TRAINER_LIBS)
test_cuda_exchange_SRC := tests/test_cuda_exchange.c tests/cuda_util.c tests/testutil.c $(TRAINER_SRC) $(COMMON_SRC)
test_cuda_exchange_LIBS := $(TRAINER_LIBS)
test_exchange_SRC := tests/test_exchange.c common/grouping.c common/exchange_methods.c trainer/exchange/placement.c trainer/exchange/node_sums.c common/dt_error.c analysis/collectives.c analysis/costmodel.c analysis/costmodel_pieces.c analysis/costmodel_bytescheduler.c common/partitions.c
test_exchange_LIBS := -lm
test_record_SRC := tests/test_record.c tests/testutil.c logs/record.c logs/json_read.c logs/record_ref.c $(COMMON_SRC)
test_record_LIBS := -ljansson
test_analyze_SRC := tests/test_analyze.c tests/analyze_util.c tests/testutil.c $(COMMON_SRC)
test_analyze_plots_SRC := tests/test_analyze_plots.c tests/analyze_util.c tests/testutil.c $(COMMON_SRC)
test_analyze_plots_LIBS := -ljansson -lm
test_analyze_folders_SRC := tests/test_analyze_folders.c tests/analyze_util.c tests/testutil.c $(COMMON_SRC)
test_analyze_folders_LIBS := -ljansson -lm
test_nodes_SRC := tests/test_nodes.c tests/analyze_util.c tests/testutil.c $(COMMON_SRC)
test_nodes_LIBS := -ljansson -lm
test_predict_SRC := tests/test_predict.c tests/analyze_util.c tests/testutil.c $(COMMON_SRC)
test_predict_LIBS := -ljansson -lm
test_analyze_LIBS := -ljansson -lm
test_checkpoint_SRC := tests/test_checkpoint.c tests/testutil.c logs/record.c logs/json_read.c trainer/loop/checkpoint.c \
                      $(COMMON_SRC)
test_checkpoint_LIBS := -ljansson -lz
test_checkpoint_files_SRC := $(test_checkpoint_SRC:tests/test_checkpoint.c=tests/test_checkpoint_files.c)
test_checkpoint_files_LIBS := -ljansson -lz
test_golden_SRC := tests/test_golden.c tests/testutil.c $(COMMON_SRC)
test_mpi_SRC := tests/test_mpi.c tests/mpi_util.c tests/testutil.c logs/record.c logs/json_read.c $(COMMON_SRC)
test_mpi_LIBS := -lm -ljansson
test_mpi_jobs_SRC := tests/test_mpi_jobs.c tests/mpi_util.c tests/testutil.c logs/record.c logs/json_read.c $(COMMON_SRC)
test_mpi_jobs_LIBS := -lm -ljansson
# An MPI program test_mpi runs under mpirun: the transport's split, non-blocking sums, send/recv.
comm_check_SRC := tests/comm_check.c trainer/comm/comm_mpi.c common/dt_error.c
comm_check_LIBS := $(MPI_LIBS)
test_fuzz_replay_SRC := tests/fuzz/fuzz_hostlist.c tests/fuzz/replay.c $(COMMON_SRC)
test_fuzz_table_SRC := tests/fuzz/fuzz_table.c tests/fuzz/replay.c logs/table.c logs/table_columns.c analysis/audit.c analysis/runid.c logs/method_table.c analysis/throughput.c logs/log_lines.c $(COMMON_SRC)
test_fuzz_table_LIBS := -lm
test_fuzz_record_SRC := tests/fuzz/fuzz_record.c tests/fuzz/replay.c logs/record.c logs/json_read.c logs/record_ref.c $(COMMON_SRC)
test_fuzz_record_LIBS := -ljansson
test_fuzz_log_SRC := tests/fuzz/fuzz_log.c tests/fuzz/replay.c analysis/throughput.c analysis/audit.c analysis/runid.c logs/method_table.c logs/table.c logs/table_columns.c logs/log_lines.c \
                     $(COMMON_SRC)
test_fuzz_log_LIBS := -lm
test_fuzz_checkpoint_SRC := tests/fuzz/fuzz_checkpoint.c tests/fuzz/replay.c trainer/loop/checkpoint.c $(COMMON_SRC)
test_fuzz_checkpoint_LIBS := -lz
test_fuzz_idx_SRC := tests/fuzz/fuzz_idx.c tests/fuzz/replay.c trainer/data/data.c trainer/data/text.c $(COMMON_SRC)
test_fuzz_idx_LIBS := -lz -lm
test_fuzz_slurmenv_SRC := tests/fuzz/fuzz_slurmenv.c tests/fuzz/replay.c $(LAUNCHER_SRC) $(TOPOLOGY_SRC) $(COMMON_SRC)
test_fuzz_slurmenv_LIBS := -lhwloc -ljansson
test_fuzz_profile_SRC := tests/fuzz/fuzz_profile.c tests/fuzz/replay.c logs/profile.c $(COMMON_SRC)
test_fuzz_profile_LIBS := -ljansson
test_fuzz_commbench_SRC := tests/fuzz/fuzz_commbench.c tests/fuzz/replay.c analysis/links.c $(COMMON_SRC)
test_fuzz_commbench_LIBS := -ljansson -lm
test_fuzz_vocab_SRC := tests/fuzz/fuzz_vocab.c tests/fuzz/replay.c trainer/data/text.c $(COMMON_SRC)
test_fuzz_text_SRC := tests/fuzz/fuzz_text.c tests/fuzz/replay.c trainer/data/text.c $(COMMON_SRC)
TESTS := test_hostlist test_hostlist_scontrol test_alloc test_dtrain test_dtrain_hints test_dtrain_record test_dtrain_uneven test_golden test_topo test_plan test_nn test_seq test_text test_train test_train_exchange test_profile test_exchange test_cuda test_cuda_models test_cuda_exchange test_record test_checkpoint test_checkpoint_files test_mpi test_mpi_jobs test_analyze test_analyze_plots test_analyze_folders test_predict test_nodes test_fuzz_replay \
         test_fuzz_table test_fuzz_record test_fuzz_log test_fuzz_checkpoint test_fuzz_idx test_fuzz_slurmenv \
         test_fuzz_profile test_fuzz_commbench test_fuzz_vocab test_fuzz_text

BIN := $(BUILD)/bin
TBIN := $(BUILD)/test/bin
obj = $(patsubst %.cu,$(1)/%.o,$(patsubst %.c,$(1)/%.o,$(2)))

.PHONY: all test golden man cluster-test cluster-demo methods-demo methods-study demo bench bench-analyze bench-seq gpu-bundle fuzz install deps clean
all: $(addprefix $(BIN)/,$(TOOLS))

# Release objects and sanitized test objects live apart, so `make && make test` rebuilds nothing twice.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $(HOT) -c $< -o $@
$(BUILD)/test/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $(HOT) $(SANITIZE) -c $< -o $@
# Device code: nvcc, no sanitizers (they cannot see into kernels); one object serves both builds.
$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
$(BUILD)/test/obj/trainer/backend/%_cuda.o: $(BUILD)/obj/trainer/backend/%_cuda.o
	@mkdir -p $(dir $@)
	cp $< $@
# nvcc writes no dependency files: the headers the device code shares, by hand
$(patsubst %.cu,$(BUILD)/obj/%.o,$(filter %.cu,$(GPU_SRC))): trainer/backend/cuda_state.h trainer/backend/backend.h \
	trainer/backend/backend_cuda.h

# The trainer's kernels: GCC 12's -O2 vectorises only loops that need no alias check, and
# errno-setting sqrtf never; its elementwise loops run 4-8x faster with these.
$(BUILD)/obj/trainer/%.o $(BUILD)/test/obj/trainer/%.o: HOT := -O3 -fno-math-errno
$(BUILD)/obj/trainer/backend/seq_fast.o $(BUILD)/test/obj/trainer/backend/seq_fast.o: HOT := -O3 -fno-math-errno -fopenmp
$(BUILD)/obj/trainer/backend/seq_gelu.o $(BUILD)/test/obj/trainer/backend/seq_gelu.o: HOT := -O3 -ffast-math -fopenmp
$(BUILD)/obj/trainer/comm/comm_mpi.o $(BUILD)/test/obj/trainer/comm/comm_mpi.o: HOT := $(MPI_CFLAGS)
$(BUILD)/obj/trainer/dtrain_commbench.o $(BUILD)/test/obj/trainer/dtrain_commbench.o: HOT := -O3 $(MPI_CFLAGS)
$(BUILD)/test/obj/tests/comm_check.o: HOT := $(MPI_CFLAGS)
$(BUILD)/obj/trainer/comm/comm_nccl.o $(BUILD)/test/obj/trainer/comm/comm_nccl.o: HOT := -I$(CUDA_HOME)/include

define tool_rules
$(BIN)/$(1): $(call obj,$(BUILD)/obj,$($(1)_SRC))
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $$^ -o $$@ $($(1)_LIBS)
$(TBIN)/$(1): $(call obj,$(BUILD)/test/obj,$($(1)_SRC))
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $(SANITIZE) $$^ -o $$@ $($(1)_LIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rules,$(t))))

define test_rules
$(TBIN)/$(1): $(call obj,$(BUILD)/test/obj,$($(1)_SRC))
	@mkdir -p $$(dir $$@)
	$(CC) $(DT_CFLAGS) $(SANITIZE) $$^ -o $$@ -lcmocka $($(1)_LIBS)
endef
$(foreach t,$(TESTS),$(eval $(call test_rules,$(t))))
$(TBIN)/comm_check: $(call obj,$(BUILD)/test/obj,$(comm_check_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $(SANITIZE) $^ -o $@ $(comm_check_LIBS)

deps:
	@sh deps/install.sh

# The suite runs the sanitized tools and ends with a short libFuzzer run (clang, from make deps).
test: deps
	@$(MAKE) --no-print-directory test-build
	@if command -v clang >/dev/null; then $(MAKE) --no-print-directory $(addprefix $(BUILD)/fuzz/fuzz_,$(FUZZERS)); fi
	@FUZZ_TIME=15 FUZZERS="$(FUZZERS)" sh tests/run.sh $(TBIN) $(TESTS)
	@sh tests/install_check.sh
	@sh tests/shape_check.sh $(BIN)
	@$(MAKE) --no-print-directory cluster-test

# End to end on a real Slurm cluster this machine starts and stops (tests/cluster/); the jobs run
# the optimised tools (the sanitized ones would report Open MPI's own leaks). Every srun and job
# wait in it has its own bound; the whole is bounded too (SIGTERM brings the cluster down first).
cluster-test: all
	@timeout -k 60 2400 sh tests/cluster/test_cluster.sh $(BIN)

cluster-demo: deps all
	@sh tests/cluster/demo.sh $(BIN)

test-build: $(addprefix $(TBIN)/,$(TOOLS) $(TESTS)) $(TBIN)/comm_check

# Rewrites tests/golden/ from what the tools print now: run it when an output changes on purpose,
# then review the diff (git diff tests/golden) as part of the change.
golden: test-build
	@DTRAIN_UPDATE_GOLDEN=1 sh tests/run.sh $(TBIN) test_golden >/dev/null; git --no-pager diff --stat -- tests/golden

# For a GPU machine that lacks this one's packages: dtrain-train, the CUDA tests (optimised, no
# sanitizers) and every library they load but the GPU's own, in .device/bundle.tar.xz; the
# device runs bench/gpu_device_run.sh from it (README.md, Benchmarks).
$(BUILD)/gpu/test_cuda: $(call obj,$(BUILD)/obj,$(test_cuda_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $^ -o $@ -lcmocka $(test_cuda_LIBS)

$(BUILD)/gpu/test_cuda_models: $(call obj,$(BUILD)/obj,$(test_cuda_models_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $^ -o $@ -lcmocka $(test_cuda_models_LIBS)

$(BUILD)/gpu/test_cuda_exchange: $(call obj,$(BUILD)/obj,$(test_cuda_exchange_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $^ -o $@ -lcmocka $(test_cuda_exchange_LIBS)

gpu-bundle: all $(BUILD)/gpu/test_cuda $(BUILD)/gpu/test_cuda_models $(BUILD)/gpu/test_cuda_exchange
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

# The seeds' method comparison on the test cluster with shaped links (root; about 15 minutes):
# every exchange method at 2 and 4 workers, 1 and 10 Gbit/s between the leaves.
bench-methods: deps all
	@sh bench/methods_shaped.sh $(BIN) $(BUILD)/bench-methods

# The seeds' method comparison, small and emulated, end to end: table, prediction, plot (bench/methods_demo.sh).
methods-demo: deps all
	@sh bench/methods_demo.sh $(BIN) $(BUILD)/methods-demo

# The seeds' scaling experiments emulated on the test cluster, each cell predicted beside measured
# (bench/methods_study.sh: ResNet-50 at 1-16 ranks over 10 Gbit/s and a fast link, BERT-Base,
# seed 002's 1 Gbit/s shape; root, about three hours; PARTS= picks).
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

$(BUILD)/bench/conv_layers: $(call obj,$(BUILD)/obj,bench/conv_layers.c $(ENGINE_SRC) common/dt_error.c)
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) $^ -o $@ $(ENGINE_LIBS)

# libFuzzer targets, one per parser; they need clang. The same sources also build with gcc as
# corpus replayers (test_fuzz_*), so every sanitized run replays the corpora.
FUZZERS := hostlist table record log checkpoint idx slurmenv profile commbench vocab text
fuzz_hostlist_SRC := tests/fuzz/fuzz_hostlist.c $(COMMON_SRC)
fuzz_table_SRC := tests/fuzz/fuzz_table.c logs/table.c logs/table_columns.c analysis/audit.c analysis/runid.c logs/method_table.c analysis/throughput.c logs/log_lines.c $(COMMON_SRC)
fuzz_record_SRC := tests/fuzz/fuzz_record.c logs/record.c logs/json_read.c logs/record_ref.c $(COMMON_SRC)
fuzz_record_LIBS := -ljansson
fuzz_log_SRC := tests/fuzz/fuzz_log.c analysis/throughput.c analysis/audit.c analysis/runid.c logs/method_table.c logs/table.c logs/table_columns.c logs/log_lines.c $(COMMON_SRC)
fuzz_checkpoint_SRC := tests/fuzz/fuzz_checkpoint.c trainer/loop/checkpoint.c $(COMMON_SRC)
fuzz_checkpoint_LIBS := -lz
fuzz_idx_SRC := tests/fuzz/fuzz_idx.c trainer/data/data.c trainer/data/text.c $(COMMON_SRC)
fuzz_idx_LIBS := -lz
fuzz_slurmenv_SRC := tests/fuzz/fuzz_slurmenv.c $(LAUNCHER_SRC) $(TOPOLOGY_SRC) $(COMMON_SRC)
fuzz_slurmenv_LIBS := -lhwloc -ljansson
fuzz_profile_SRC := tests/fuzz/fuzz_profile.c logs/profile.c $(COMMON_SRC)
fuzz_profile_LIBS := -ljansson
fuzz_commbench_SRC := tests/fuzz/fuzz_commbench.c analysis/links.c $(COMMON_SRC)
fuzz_commbench_LIBS := -ljansson
fuzz_vocab_SRC := tests/fuzz/fuzz_vocab.c trainer/data/text.c $(COMMON_SRC)
fuzz_text_SRC := tests/fuzz/fuzz_text.c trainer/data/text.c $(COMMON_SRC)
define fuzz_rules
$(BUILD)/fuzz/fuzz_$(1): $(fuzz_$(1)_SRC)
	@mkdir -p $$(dir $$@)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Icommon -Ilogs -Ianalysis -Ilauncher -Itopology -Itrainer/loop -Itrainer/data -Itrainer/backend \
	    -fsanitize=fuzzer,address,undefined $$^ -o $$@ \
	    $(fuzz_$(1)_LIBS) -lm
endef
$(foreach f,$(FUZZERS),$(eval $(call fuzz_rules,$(f))))

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
MAN := $(addprefix $(BUILD)/man/,$(addsuffix .1,$(TOOLS)))
$(BUILD)/man/%.1: $(BIN)/%
	@mkdir -p $(dir $@)
	help2man --no-info --no-discard-stderr --name="$($*_WHAT)" --output=$@.tmp $< && mv $@.tmp $@
man: $(MAN)

install: all man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(addprefix $(BIN)/,$(TOOLS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
