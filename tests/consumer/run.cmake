# The `consumer` ctest: install the build tree into a temporary prefix, then use it
# from outside, as a user would, through find_package(cothread) and pkg-config.
#
#   cmake -DCOTHREAD_BUILD_DIR=<build> -DCONSUMER_SOURCE_DIR=<src>/tests/consumer
#         -DCONSUMER_PREFIX=<tmp prefix> -DCONSUMER_BUILD_DIR=<tmp build>
#         [-DCONSUMER_GENERATOR=...] [-DCONSUMER_BUILD_TYPE=...]
#         [-DCONSUMER_C_COMPILER=...] [-DCONSUMER_CXX_COMPILER=...]
#         [-DPKG_CONFIG_EXECUTABLE=...] [-DCONSUMER_READELF=...]
#         [-DCOTHREAD_DEBUG_INFO=ON|OFF] [-DCONSUMER_LUA=ON|OFF] -P run.cmake
#
# With -DCOTHREAD_SOURCE_DIR=<src> it first configures and builds <build> from <src>
# itself, with COTHREAD_LUA=CONSUMER_LUA (and COTHREAD_CARGO_TARGET_DIR if given).
# CONSUMER_LUA=OFF: the install must hold nothing of Lua.
cmake_minimum_required(VERSION 3.20)

foreach(_var COTHREAD_BUILD_DIR CONSUMER_SOURCE_DIR CONSUMER_PREFIX CONSUMER_BUILD_DIR)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "consumer: -D${_var}=... is required")
  endif()
endforeach()

# Runs a command; stops the test with the step name and the command's output if it fails.
function(step name)
  message(STATUS "consumer: ${name}")
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    string(JOIN " " _cmd ${ARGN})
    message(FATAL_ERROR "consumer: ${name} FAILED (${_rc})\n  command: ${_cmd}\n"
                        "--- stdout ---\n${_out}\n--- stderr ---\n${_err}")
  endif()
  set(STEP_OUTPUT "${_out}" PARENT_SCOPE)
endfunction()

# Runs a test program and checks that it printed `expect` on a line of its own.
function(run_program name expect)
  step("run ${name}" ${ARGN})
  if(NOT STEP_OUTPUT MATCHES "(^|\n)${expect}\n")
    message(FATAL_ERROR "consumer: ${name} did not print '${expect}':\n${STEP_OUTPUT}")
  endif()
  message(STATUS "consumer: ${name}: ${expect}")
endfunction()

if(NOT DEFINED CONSUMER_LUA)
  set(CONSUMER_LUA ON)
endif()
file(REMOVE_RECURSE "${CONSUMER_PREFIX}" "${CONSUMER_BUILD_DIR}")

# configure_command(<out var> <source> <build> [options...]): cmake's configure of
# <source> in <build> with the generator and build type given to this script.
function(configure_command out src build)
  set(_cmd "${CMAKE_COMMAND}" -S "${src}" -B "${build}" ${ARGN})
  if(CONSUMER_GENERATOR)
    list(APPEND _cmd -G "${CONSUMER_GENERATOR}")
  endif()
  if(CONSUMER_BUILD_TYPE)
    list(APPEND _cmd "-DCMAKE_BUILD_TYPE=${CONSUMER_BUILD_TYPE}")
  endif()
  set(${out} ${_cmd} PARENT_SCOPE)
endfunction()

# 0. The build, when asked: the project configured and built as the README says.
if(COTHREAD_SOURCE_DIR)
  configure_command(_build_configure "${COTHREAD_SOURCE_DIR}" "${COTHREAD_BUILD_DIR}"
                    "-DCOTHREAD_LUA=${CONSUMER_LUA}")
  if(COTHREAD_CARGO_TARGET_DIR)
    list(APPEND _build_configure "-DCOTHREAD_CARGO_TARGET_DIR=${COTHREAD_CARGO_TARGET_DIR}")
  endif()
  step("configure cothread (COTHREAD_LUA=${CONSUMER_LUA})" ${_build_configure})
  step("build cothread" "${CMAKE_COMMAND}" --build "${COTHREAD_BUILD_DIR}")
endif()

# 1. Install.
step("install into ${CONSUMER_PREFIX}"
  "${CMAKE_COMMAND}" --install "${COTHREAD_BUILD_DIR}" --prefix "${CONSUMER_PREFIX}")
set(_installed lib/libcothread.so lib/libcothread.so.0 lib/libcothread.a include/cothread.h
               lib/cmake/cothread/cothreadConfig.cmake
               lib/cmake/cothread/cothreadConfigVersion.cmake lib/pkgconfig/cothread.pc)
if(CONSUMER_LUA)
  list(APPEND _installed lib/libcothread_lua.so lib/libcothread_lua.so.0 lib/lua/5.4/cothread.so)
else()
  file(GLOB_RECURSE _lua_files RELATIVE "${CONSUMER_PREFIX}" "${CONSUMER_PREFIX}/*lua*")
  if(_lua_files)
    message(FATAL_ERROR "consumer: COTHREAD_LUA=OFF, yet the install holds ${_lua_files}")
  endif()
endif()
foreach(_f IN LISTS _installed)
  if(NOT EXISTS "${CONSUMER_PREFIX}/${_f}")
    message(FATAL_ERROR "consumer: the install did not produce ${_f}")
  endif()
endforeach()
if(NOT IS_SYMLINK "${CONSUMER_PREFIX}/lib/libcothread.so")
  message(FATAL_ERROR "consumer: lib/libcothread.so should be a symlink to libcothread.so.0")
endif()
if(NOT IS_DIRECTORY "${CONSUMER_PREFIX}/include/cocls")
  message(FATAL_ERROR "consumer: the install did not produce include/cocls/")
endif()

# The libraries are installed stripped (CMakeLists.txt, "What the install copies"):
# no DWARF, no LLVM bitcode in libcothread.a; with COTHREAD_DEBUG_INFO, each shared
# object names its .debug file, which is installed beside it, and libcothread.a keeps
# its debug info.
if(CONSUMER_READELF)
  set(_readelf "${CONSUMER_READELF}")
else()
  find_program(_readelf readelf REQUIRED)
endif()
file(GLOB _shared RELATIVE "${CONSUMER_PREFIX}" "${CONSUMER_PREFIX}/lib/libcothread*.so.0"
                                                "${CONSUMER_PREFIX}/lib/lua/*/cothread.so")
foreach(_f IN LISTS _shared)
  step("readelf -S ${_f}" "${_readelf}" -S -W "${CONSUMER_PREFIX}/${_f}")
  if(STEP_OUTPUT MATCHES "\\.debug_")
    message(FATAL_ERROR "consumer: ${_f} was installed with its debug info")
  endif()
  get_filename_component(_dir "${_f}" DIRECTORY)
  get_filename_component(_name "${_f}" NAME)
  if(COTHREAD_DEBUG_INFO AND NOT (STEP_OUTPUT MATCHES "\\.gnu_debuglink"
                                  AND EXISTS "${CONSUMER_PREFIX}/${_dir}/.debug/${_name}.debug"))
    message(FATAL_ERROR "consumer: ${_f} does not name ${_dir}/.debug/${_name}.debug, or it is missing")
  endif()
endforeach()
step("readelf -S lib/libcothread.a" "${_readelf}" -S -W "${CONSUMER_PREFIX}/lib/libcothread.a")
if(STEP_OUTPUT MATCHES "\\.llvmbc")
  message(FATAL_ERROR "consumer: lib/libcothread.a was installed with LLVM bitcode (.llvmbc)")
endif()
if(COTHREAD_DEBUG_INFO AND NOT STEP_OUTPUT MATCHES "\\.debug_info")
  message(FATAL_ERROR "consumer: lib/libcothread.a lost its debug info (COTHREAD_DEBUG_INFO is ON)")
elseif(NOT COTHREAD_DEBUG_INFO AND STEP_OUTPUT MATCHES "\\.debug_")
  message(FATAL_ERROR "consumer: lib/libcothread.a was installed with its debug info")
endif()
list(LENGTH _shared _n)
message(STATUS "consumer: ${_n} shared objects and libcothread.a installed stripped")

# 2. find_package(cothread) from an outside CMake project: shared, static and C++.
configure_command(_configure "${CONSUMER_SOURCE_DIR}" "${CONSUMER_BUILD_DIR}"
                  "-DCMAKE_PREFIX_PATH=${CONSUMER_PREFIX}")
if(CONSUMER_C_COMPILER)
  list(APPEND _configure "-DCMAKE_C_COMPILER=${CONSUMER_C_COMPILER}")
endif()
if(CONSUMER_CXX_COMPILER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}")
endif()
step("configure tests/consumer (find_package)" ${_configure})
step("build tests/consumer" "${CMAKE_COMMAND}" --build "${CONSUMER_BUILD_DIR}")

# No LD_LIBRARY_PATH anywhere below: the programs find libcothread.so.0 under the
# temporary prefix through their RUNPATH (doc/c.md, "How a program finds the library").
set(_env "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH)
run_program(consumer_shared "consumer ok" ${_env} "${CONSUMER_BUILD_DIR}/consumer_shared")
run_program(consumer_static "consumer ok" ${_env} "${CONSUMER_BUILD_DIR}/consumer_static")
run_program(consumer_cpp "consumer_cpp ok" ${_env} "${CONSUMER_BUILD_DIR}/consumer_cpp")
if(EXISTS "${CONSUMER_BUILD_DIR}/consumer_lua")
  run_program(consumer_lua "consumer_lua ok" ${_env} "${CONSUMER_BUILD_DIR}/consumer_lua")
else()
  message(STATUS "consumer: no Lua 5.4 for pkg-config: consumer_lua not built")
endif()
if(EXISTS "${CONSUMER_BUILD_DIR}/consumer_luajit")
  run_program(consumer_luajit "consumer_lua ok" ${_env} "${CONSUMER_BUILD_DIR}/consumer_luajit")
else()
  message(STATUS "consumer: no LuaJIT for pkg-config or no Lua 5.1 build: consumer_luajit not built")
endif()

# The consumer's own install (CMAKE_INSTALL_RPATH_USE_LINK_PATH in its CMakeLists.txt).
set(_app_prefix "${CONSUMER_BUILD_DIR}/app-prefix")
step("install tests/consumer into ${_app_prefix}"
  "${CMAKE_COMMAND}" --install "${CONSUMER_BUILD_DIR}" --prefix "${_app_prefix}")
run_program(consumer_shared_installed "consumer ok" ${_env} "${_app_prefix}/bin/consumer_shared")
run_program(consumer_cpp_installed "consumer_cpp ok" ${_env} "${_app_prefix}/bin/consumer_cpp")

# The shared one must need the library by its SONAME, the static one not at all.
if(_readelf)
  step("readelf consumer_shared" "${_readelf}" -d "${CONSUMER_BUILD_DIR}/consumer_shared")
  if(NOT STEP_OUTPUT MATCHES "NEEDED[^\n]*\\[libcothread\\.so\\.0\\]")
    message(FATAL_ERROR "consumer: consumer_shared does not need libcothread.so.0:\n${STEP_OUTPUT}")
  endif()
  step("readelf consumer_static" "${_readelf}" -d "${CONSUMER_BUILD_DIR}/consumer_static")
  if(STEP_OUTPUT MATCHES "libcothread")
    message(FATAL_ERROR "consumer: consumer_static depends on a shared libcothread:\n${STEP_OUTPUT}")
  endif()
endif()

# 3. pkg-config: flags from the installed cothread.pc, compile main.c by hand.
if(NOT PKG_CONFIG_EXECUTABLE)
  find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
endif()
if(NOT PKG_CONFIG_EXECUTABLE)
  message(FATAL_ERROR "consumer: pkg-config not found (scripts/setup installs it)")
endif()
set(_pc_env "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${CONSUMER_PREFIX}/lib/pkgconfig")
step("pkg-config --modversion cothread" ${_pc_env} "${PKG_CONFIG_EXECUTABLE}" --modversion cothread)
string(STRIP "${STEP_OUTPUT}" _pc_version)
message(STATUS "consumer: pkg-config: cothread ${_pc_version}")
step("pkg-config --cflags --libs cothread" ${_pc_env} "${PKG_CONFIG_EXECUTABLE}" --cflags --libs cothread)
string(STRIP "${STEP_OUTPUT}" _pc_flags)
message(STATUS "consumer: pkg-config flags: ${_pc_flags}")
separate_arguments(_pc_flags UNIX_COMMAND "${_pc_flags}")

if(CONSUMER_C_COMPILER)
  set(_cc "${CONSUMER_C_COMPILER}")
else()
  find_program(_cc NAMES cc gcc REQUIRED)
endif()
# As doc/c.md says: -Wl,-rpath,$(pkg-config --variable=libdir cothread).
step("pkg-config --variable=libdir cothread" ${_pc_env} "${PKG_CONFIG_EXECUTABLE}" --variable=libdir cothread)
string(STRIP "${STEP_OUTPUT}" _pc_libdir)
set(_pc_exe "${CONSUMER_BUILD_DIR}/consumer_pkgconfig")
step("compile main.c with the pkg-config flags"
  "${_cc}" -std=c11 -Wall -Wextra -Werror "${CONSUMER_SOURCE_DIR}/main.c" ${_pc_flags}
  "-Wl,-rpath,${_pc_libdir}" -o "${_pc_exe}")
run_program(consumer_pkgconfig "consumer ok" ${_env} "${_pc_exe}")

message(STATUS "consumer: all checks passed")
