# Starting and stopping the echo servers of bench/lua (sourced by echo.sh,
# idle.sh and tls_echo.sh). Each server is `$COT_BENCH_LUA echo_<name>.lua
# CPATH_DIR SIZE [more]` (the interpreter: lua5.4 unless set, e.g. luajit),
# prints its port on its first line and runs until killed.

lua=${COT_BENCH_LUA:-lua5.4}
tmp=$(mktemp -d)
server_pid=
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
