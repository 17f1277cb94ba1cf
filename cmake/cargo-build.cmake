# One cargo build of the Lua module, and its copies in the build tree, under a lock on
# cargo's target folder (CMakeLists.txt runs it, once per Lua version):
#
#   cmake -DCARGO=<cargo> -DSOURCE_DIR=<checkout> -DTARGET_DIR=<cargo's target folder>
#         -DPROFILE_DIR=release|debug [-DPROFILE_FLAG=--release] -DLUA=51|52|53|54
#         -DLUA_DIR=<build>/lua<v> -DLINKLIB=<name>.so.0 -DPATCHELF=<patchelf>
#         -P cmake/cargo-build.cmake
#
# LUA=54 builds the core too (`cargo build -p cothread -p cothread-lua`), the others
# `cargo build -p cothread-lua --no-default-features --features lua<v>`; LUA=none the
# core alone (`cargo build -p cothread`: COTHREAD_LUA=OFF), with no LUA_DIR or LINKLIB.
#
# Every Lua version builds in the same target folder, so the core and the crates that
# do not depend on the Lua version are compiled once. cargo keeps one slot for the
# module's own crate (a cdylib of the workspace: its files carry no hash), which it
# rebuilds when the features change: after each build, target/<profile>/
# libcothread_lua.so is the Lua version just built, until the next build. The lock
# keeps that next build (another Lua version, from this build tree or from another
# one sharing the folder, such as a LuaRocks build) out until the copies are made; a
# cargo run by hand in the same folder does not take it. (cargo's --artifact-dir would
# make the copies itself, but is unstable: nightly only, as of cargo 1.95.)
cmake_minimum_required(VERSION 3.20)

set(_required CARGO SOURCE_DIR TARGET_DIR PROFILE_DIR LUA)
if(NOT LUA STREQUAL "none")
  list(APPEND _required LUA_DIR LINKLIB PATCHELF)
endif()
foreach(_var IN LISTS _required)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "cargo-build.cmake: -D${_var}=... is required")
  endif()
endforeach()

if(LUA STREQUAL "none")
  set(_packages -p cothread)
elseif(LUA STREQUAL "54")
  set(_packages -p cothread -p cothread-lua)
else()
  set(_packages -p cothread-lua --no-default-features --features lua${LUA})
endif()

file(MAKE_DIRECTORY "${TARGET_DIR}")
file(LOCK "${TARGET_DIR}/cothread-cmake.lock" GUARD PROCESS)

execute_process(
  COMMAND "${CARGO}" build ${_packages} ${PROFILE_FLAG} --target-dir "${TARGET_DIR}"
  WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  list(JOIN _packages " " _shown)
  message(FATAL_ERROR "cargo build ${_shown} ${PROFILE_FLAG} failed (${_rc})")
endif()
if(LUA STREQUAL "none")
  return()  # the core alone: no module to copy (the lock goes with the process)
endif()

# The module for `require`, and a copy named after its own SONAME for hosts that link
# it (cargo gives every cdylib of the workspace the core's SONAME: a dependency's cdylib
# link arguments reach its dependents).
set(_lib "${TARGET_DIR}/${PROFILE_DIR}/libcothread_lua.so")
file(MAKE_DIRECTORY "${LUA_DIR}")
foreach(_copy cothread.so ${LINKLIB})
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${_lib}" "${LUA_DIR}/${_copy}"
                  COMMAND_ERROR_IS_FATAL ANY)
endforeach()
file(LOCK "${TARGET_DIR}/cothread-cmake.lock" RELEASE)

execute_process(COMMAND "${PATCHELF}" --set-soname "${LINKLIB}" "${LUA_DIR}/${LINKLIB}"
                COMMAND_ERROR_IS_FATAL ANY)
