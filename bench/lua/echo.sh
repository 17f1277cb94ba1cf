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
rounds=${COT_BENCH_ROUNDS:-4}
conns=${COT_BENCH_CONNS:-64}
size=${COT_BENCH_SIZE:-4096}
depth=${COT_BENCH_DEPTH:-1}
lua_dir=${COTHREAD_LUA_DIR:-$here/../../build/lua}
servers="cothread luv cqueues"

. "$here/servers.sh"
check_servers "$lua_dir"
make -s -C "$here" echo-client

results=$tmp/results
: > "$results"
round=1
while [ "$round" -le "$rounds" ]; do
    for s in $servers; do
        start_server "$s" "$lua_dir" "$size"
        "$here/echo-client" -c "$conns" -s "$size" -d "$depth" -t "$seconds" -p "$server_pid" -n "$s" \
            "$server_port" > "$tmp/line"
        cat "$tmp/line"
        cat "$tmp/line" >> "$results"
        stop_server
    done
    round=$((round + 1))
done

# Best throughput (field 2) and lowest server CPU per message of each server;
# messages per second of server CPU (1 / CPU per message) is the figure a busy
# shared machine disturbs least.
awk -v rounds="$rounds" '
    { mib[$1] = ($2 > mib[$1]) ? $2 : mib[$1]
      for (i = 1; i < NF; i++) if ($i == "CPU") { c = $(i + 1); if (!($1 in cpu) || c < cpu[$1]) cpu[$1] = c } }
    END {
        printf "best of %d round(s):\n", rounds
        split("cothread luv cqueues", names, " ")
        for (k = 1; k <= 3; k++)
            printf "  %-9s %8.1f MiB/s  %6.2f us of server CPU per message\n", names[k], mib[names[k]], cpu[names[k]]
        for (k = 2; k <= 3; k++)
            printf "cothread / %-8s throughput %.2f, per server CPU second %.2f   (target >= 1)\n", names[k] ":",
                mib["cothread"] / mib[names[k]], cpu[names[k]] / cpu["cothread"]
    }' "$results"
