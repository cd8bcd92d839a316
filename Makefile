# Thin wrapper over CMake: the two commands users need are `make demo` and `make test`.
BUILD    ?= build
TYPE     ?= RelWithDebInfo
CMAKE_FLAGS ?=
# Tests run side by side, one per core: most of a multi-node test's time is
# its processes waiting on each other, not computing.
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps test demo bench clean

# The build's chatter goes to $(BUILD)/build.log, shown only when it fails,
# so that `make demo` and `make test` show what they are for.
all: deps $(BUILD)/CMakeCache.txt
	@echo "building (log: $(BUILD)/build.log)"
	@cmake --build $(BUILD) -j2 > $(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }

$(BUILD)/CMakeCache.txt:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(TYPE) $(CMAKE_FLAGS) >/dev/null

deps:
	@tools/install-deps.sh

test: all
	@cd $(BUILD) && ctest -j$(JOBS) --output-on-failure --timeout 300

demo: all
	@$(BUILD)/tools/dsmrun -n 4 --stats $(BUILD)/bench/sor

# The application suite (issue 5): bench/run --quick by default; BENCH_ARGS="--full" etc.
bench: all
	@bench/run --build $(BUILD) $(BENCH_ARGS)

clean:
	@rm -rf $(BUILD)
