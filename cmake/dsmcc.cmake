# Programs built with dsmcc (shared globals, master-only start, PARMACS
# sources), as a user builds them:
#   dsmcc_program(name SOURCES s.. [FLAGS f..] [THREADS] [LANG CXX|Fortran]
#                 [DEPENDS f..])
# makes ${CMAKE_CURRENT_BINARY_DIR}/name (THREADS: dsmcc --pthreads, the
# pthreads baseline; LANG: with dsmc++ or dsmfort; DEPENDS: files the
# sources include besides headers, relative to the current source
# directory), built by `make` like every other target.
set(DSMCC ${CMAKE_BINARY_DIR}/tools/dsmcc)
set(DSMCC_DEPENDS ${CMAKE_SOURCE_DIR}/tools/dsmcc.in ${CMAKE_SOURCE_DIR}/include/dsm.h
    ${CMAKE_SOURCE_DIR}/include/dsm/parmacs.m4 ${CMAKE_SOURCE_DIR}/include/dsm/parmacs.h
    ${CMAKE_SOURCE_DIR}/include/dsm/parmacs-threads.m4 ${CMAKE_SOURCE_DIR}/include/dsm/parmacs-threads.h
    ${CMAKE_SOURCE_DIR}/include/dsm/pthread.h
    ${CMAKE_SOURCE_DIR}/src/start/globals.ld dsmcc-asm)
function(dsmcc_program name)
  cmake_parse_arguments(D "THREADS" "LANG" "SOURCES;FLAGS;DEPENDS" ${ARGN})
  set(mode)
  set(deps ${DSMCC_DEPENDS})
  foreach(f ${D_DEPENDS})
    list(APPEND deps ${CMAKE_CURRENT_SOURCE_DIR}/${f})
  endforeach()
  set(wrapper ${DSMCC})
  set(warnings -Wall -Wextra ${DSM_WERROR_FLAG})
  set(tool dsmcc)
  if(D_LANG STREQUAL "CXX")
    set(tool dsmc++)
    set(wrapper ${CMAKE_BINARY_DIR}/tools/dsmc++)
  elseif(D_LANG STREQUAL "Fortran")
    set(wrapper ${CMAKE_BINARY_DIR}/tools/dsmfort)
    set(tool dsmfort)
    set(warnings)  # flang's warnings are not gcc's
  endif()
  if(D_THREADS)
    set(mode --pthreads)
  else()
    list(APPEND deps dsm_shared dsm_start)
  endif()
  set(srcs)
  foreach(s ${D_SOURCES})
    list(APPEND srcs ${CMAKE_CURRENT_SOURCE_DIR}/${s})
  endforeach()
  # dsmcc compiles with clang (its atomics need LLVM), so a program cannot
  # carry gcc's ASan instrumentation: it stays uninstrumented and links
  # gcc's runtimes (DSM_SAN_RUNTIMES). The --pthreads baseline, without
  # libdsm, carries clang's own.
  if(DSM_SANITIZE AND NOT D_THREADS)
    list(APPEND D_FLAGS -Wl,--no-as-needed ${DSM_SAN_RUNTIMES})
  elseif(DSM_SANITIZE AND NOT "-fopenmp" IN_LIST D_FLAGS)
    list(APPEND D_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer)
  endif()
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}
    COMMAND ${wrapper} ${mode} -O2 -g ${warnings} ${D_FLAGS}
            -o ${CMAKE_CURRENT_BINARY_DIR}/${name} ${srcs} -lm
    DEPENDS ${srcs} ${deps}
    COMMENT "${tool} ${mode} ${name}")
  add_custom_target(${name} ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${name})
endfunction()
