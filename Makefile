# gcn: one Makefile, out-of-tree build in $(BUILD)/, automatic header deps.
#   make            libgcn.a, libgcn.so (and the tools, once they exist)
#   make test       build and run the Criterion suite
#   make asan       the suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make setup      install the Debian packages the build needs
#   make install    PREFIX=/usr/local: library, headers, gcn.pc
#   make clean

SHELL     := /bin/bash
CC        := gcc
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= sm_90
PREFIX    ?= /usr/local
BUILD     ?= build
DEBUG     ?= 0

ifeq ($(DEBUG),1)
  OPT := -O0 -g3
else
  OPT := -O2 -g
endif

CPPFLAGS  := -I. -I$(CUDA_HOME)/include -MMD -MP
CFLAGS    := -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -fPIC $(OPT) $(EXTRA_CFLAGS)
NVFLAGS   := -std=c++17 -arch=$(CUDA_ARCH) -I. -Xcompiler -fPIC,-Wall -MMD -MP $(if $(filter 1,$(DEBUG)),-G -O0,-O3 -lineinfo)
LDLIBS    := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcusparse -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm
TEST_LIBS := -lcriterion

LIB_DIRS  := core kernels optim datasets layers models
LIB_C     := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c $(d)/*/*.c))
LIB_CU    := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cu $(d)/*/*.cu))
LIB_OBJ   := $(LIB_C:%.c=$(BUILD)/obj/%.o) $(LIB_CU:%.cu=$(BUILD)/obj/%.cu.o)
TEST_C    := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_C:%.c=$(BUILD)/obj/%.o)
TOOLS     := $(patsubst tools/%.c,$(BUILD)/%,$(wildcard tools/*.c))
HEADERS   := gcn.h $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.h))
PUBLIC_H  := gcn.h $(filter-out %/internal.h %_impl.h,$(HEADERS))

TEST_ARGS ?=

.PHONY: all test asan setup install clean
all: $(BUILD)/libgcn.a $(BUILD)/libgcn.so $(TOOLS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/libgcn.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libgcn.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/%: tools/%.c $(BUILD)/libgcn.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(BUILD)/libgcn.a $(LDLIBS)

$(BUILD)/gcn_tests: $(TEST_OBJ) $(BUILD)/libgcn.a
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/libgcn.a $(LDLIBS) $(TEST_LIBS)

# Criterion forks a worker per test; -j2 matches the machines CI runs on.
test: all $(BUILD)/gcn_tests
	$(BUILD)/gcn_tests -j2 $(TEST_ARGS)

# Sanitised build in its own tree; protect_shadow_gap=0 lets the CUDA
# runtime map its memory under ASan.  Criterion reports a test as passing
# even when the sanitizer flags its worker, so the log decides.
asan:
	$(MAKE) BUILD=$(BUILD)/asan DEBUG=1 \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	    $(BUILD)/asan/gcn_tests
	set -o pipefail; ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(BUILD)/asan/gcn_tests -j2 $(TEST_ARGS) 2>&1 | tee $(BUILD)/asan.log
	@! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' $(BUILD)/asan.log || \
	    { echo "asan: sanitizer reports in $(BUILD)/asan.log" >&2; exit 1; }

setup:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	    make gcc libmetis-dev zlib1g-dev libcjson-dev libcriterion-dev
	@test -x $(NVCC) || { echo "setup: nvcc not found at $(NVCC) (set CUDA_HOME)" >&2; exit 1; }
	@$(NVCC) --version | tail -n 1

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/gcn $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(BUILD)/libgcn.a $(BUILD)/libgcn.so $(DESTDIR)$(PREFIX)/lib/
	for h in $(PUBLIC_H); do install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/gcn/$$h; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/.*GCN_VERSION_STRING "\(.*\)"/\1/p' gcn.h)|' \
	    -e 's|@CUDA_HOME@|$(CUDA_HOME)|' gcn.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gcn.pc

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
