# Starting and stopping the echo servers of bench/lua (sourced by echo.sh,
# idle.sh and tls_echo.sh). Each server is `$COT_BENCH_LUA echo_<name>.lua
# CPATH_DIR SIZE [more]` (the interpreter: lua5.4 unless set, e.g. luajit),
# prints its port on its first line and runs until killed.

lua=${COT_BENCH_LUA:-lua5.4}
# The settings echo.sh and tls_echo.sh share (their headers say what each means;
# each sets `seconds`, idle.sh sets its own first).
rounds=${rounds:-${COT_BENCH_ROUNDS:-4}}
conns=${conns:-${COT_BENCH_CONNS:-64}}
size=${size:-${COT_BENCH_SIZE:-4096}}
depth=${depth:-${COT_BENCH_DEPTH:-1}}
lua_dir=${lua_dir:-${COTHREAD_LUA_DIR:-$here/../../build/lua}}
tmp=$(mktemp -d)
server_pid=
server_prefix=   # tls_ for echo_tls_NAME.lua
server_args=     # after CPATH_DIR SIZE
trap 'stop_server; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# Fails unless $lua loads cothread (from $1), luv and cqueues.
check_servers() {
    if ! "$lua" -e "package.cpath = '$1/?.so;' .. package.cpath; require 'cothread'" 2>/dev/null; then
        echo "bench: $lua cannot load cothread.so from $1 (build it for $lua: cmake -S . -B build && cmake --build build)" >&2
        exit 1
    fi
    if ! "$lua" -e 'require "luv"; require "cqueues"' 2>/dev/null; then
        echo "bench: $lua cannot load luv and cqueues (Debian: apt-get install lua-luv lua-cqueues)" >&2
        exit 1
    fi
}

# start_server NAME CPATH_DIR SIZE [MORE...]: sets server_pid and server_port.
start_server() {
    name=$1
    shift
    rm -f "$tmp/port"
    "$lua" "$here/echo_$name.lua" "$@" > "$tmp/port" &
    server_pid=$!
    server_port=
    i=0
    while [ -z "$server_port" ]; do
        i=$((i + 1))
        if [ "$i" -gt 100 ] || ! kill -0 "$server_pid" 2>/dev/null; then
            echo "bench: the $name server did not start" >&2
            exit 1
        fi
        sleep 0.05
        server_port=$(head -n 1 "$tmp/port" 2>/dev/null || true)
    done
}

stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=
    fi
}

# run_rounds SERVERS [CLIENT_OPTION...]: $rounds rounds, the servers
# alternating; each is loaded by echo-client for $seconds. The client's lines
# go to stdout and to $tmp/results.
run_rounds() {
    list=$1
    shift
    : > "$tmp/results"
    round=1
    while [ "$round" -le "$rounds" ]; do
        for s in $list; do
            # shellcheck disable=SC2086 # server_args: words (paths in $tmp)
            start_server "$server_prefix$s" "$lua_dir" "$size" $server_args
            "$here/echo-client" "$@" -c "$conns" -s "$size" -d "$depth" -t "$seconds" \
                -p "$server_pid" -n "$s" "$server_port" > "$tmp/line"
            cat "$tmp/line"
            cat "$tmp/line" >> "$tmp/results"
            stop_server
        done
        round=$((round + 1))
    done
}

# report TITLE SERVERS: each server's best throughput (field 2) and lowest
# server CPU per message, then the first server's ratios to each other one.
# Messages per second of server CPU (1 / CPU per message) is the figure a
# busy shared machine disturbs least.
report() {
    awk -v rounds="$rounds" -v title="$1" -v list="$2" '
        { mib[$1] = ($2 > mib[$1]) ? $2 : mib[$1]
          for (i = 1; i < NF; i++) if ($i == "CPU") { c = $(i + 1); if (!($1 in cpu) || c < cpu[$1]) cpu[$1] = c } }
        END {
            printf "best of %d round(s)%s:\n", rounds, title
            n = split(list, names, " ")
            for (k = 1; k <= n; k++)
                printf "  %-9s %8.1f MiB/s  %6.2f us of server CPU per message\n", names[k], mib[names[k]], cpu[names[k]]
            for (k = 2; k <= n; k++)
                printf "%s / %-8s throughput %.2f, per server CPU second %.2f   (target >= 1)\n", names[1], names[k] ":",
                    mib[names[1]] / mib[names[k]], cpu[names[k]] / cpu[names[1]]
        }' "$tmp/results"
}
