# Thin wrapper over CMake: the two commands users need are `make demo` and `make test`.
BUILD    ?= build
TYPE     ?= RelWithDebInfo
CMAKE_FLAGS ?=

.PHONY: all deps test demo bench clean

all: deps $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j2

$(BUILD)/CMakeCache.txt:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(TYPE) $(CMAKE_FLAGS) >/dev/null

deps:
	@tools/install-deps.sh

test: all
	@cd $(BUILD) && ctest --output-on-failure --timeout 300

demo: all
	@$(BUILD)/tools/dsmrun -n 4 --stats $(BUILD)/bench/sor

clean:
	@rm -rf $(BUILD)
