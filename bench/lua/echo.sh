#!/bin/sh
# TCP echo throughput on loopback, side by side in one run: an echo server
# written with cothread.socket (one cothread per connection, straight-line
# receive/send), one with lua-luv (libuv callbacks) and one with lua-cqueues
# (a coroutine per connection), each driven by the same C client
# (echo_client.c: CONNS connections each keeping one SIZE-byte message in
# flight, every echoed byte checked).
#
#   bench/lua/echo.sh [seconds]      # seconds per server and round (default 2)
#   COT_BENCH_LUA=luajit COTHREAD_LUA_DIR=target/lua51/release/benchmod bench/lua/echo.sh
#
# Environment: COT_BENCH_ROUNDS (rounds, the servers alternating; default 4),
# COT_BENCH_CONNS (64), COT_BENCH_SIZE (4096), COT_BENCH_DEPTH (messages in
# flight per connection, 1), COTHREAD_LUA_DIR (the directory holding
# cothread.so; default build/lua), COT_BENCH_LUA (the interpreter of the three
# servers, lua5.4; with luajit, COTHREAD_LUA_DIR holds the build for 5.1).
# Prints each measurement, then per server the best throughput and the lowest
# server CPU per message of the rounds, and the ratios cothread / luv and
# cothread / cqueues of throughput and of messages per second of server CPU
# (the target is >= 1).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-${COT_BENCH_SECONDS:-2}}
servers="cothread luv cqueues"

. "$here/servers.sh"
check_servers "$lua_dir"
make -s -C "$here" echo-client

run_rounds "$servers"
report "" "$servers"
