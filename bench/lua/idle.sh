#!/bin/sh
# Idle cost: each echo server of bench/lua (cothread, luv, cqueues) with
# CONNS open connections that are all waiting (each echoed one message, so
# the server accepted it and waits in a receive on it): the server process's
# CPU time over SECONDS of that idleness (utime + stime from /proc/<pid>/stat,
# in clock ticks), how often it woke up (context switches of its threads) and
# its resident memory, measured by echo_client -i, a separate process.
#
#   bench/lua/idle.sh [conns [seconds]]     # default 10000 connections, 3 s
#   COT_BENCH_PENDING=3 bench/lua/idle.sh 2000   # each holding 3 bytes of a next message
#
# Raises the soft descriptor limit to 20000 for the servers and the client
# (the hard limit must allow it). Environment: COT_BENCH_SIZE (the message
# echoed once per connection, 4096), COTHREAD_LUA_DIR (default build/lua),
# COT_BENCH_LUA (the servers' interpreter, lua5.4: see echo.sh).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
conns=${1:-10000}
seconds=${2:-3}
size=${COT_BENCH_SIZE:-4096}
lua_dir=${COTHREAD_LUA_DIR:-$here/../../build/lua}

if ! ulimit -n 20000 2>/dev/null; then
    echo "bench: cannot raise the descriptor limit to 20000 (hard limit: $(ulimit -H -n))" >&2
    exit 1
fi
. "$here/servers.sh"
check_servers "$lua_dir"
make -s -C "$here" echo-client

for s in cothread luv cqueues; do
    start_server "$s" "$lua_dir" "$size"
    "$here/echo-client" -i -c "$conns" -s "$size" -P "${COT_BENCH_PENDING:-0}" -t "$seconds" -p "$server_pid" -n "$s" "$server_port"
    stop_server
done
