#!/bin/sh
# TLS echo throughput on loopback: an echo server written with cothread.ssl
# (LuaSec's API on cothread.socket, a cothread per connection, straight-line
# receive/send) against one with cqueues' TLS (`socket:starttls`, a
# coroutine per connection), both driven by the C client in TLS mode
# (echo_client -T: CONNS connections each keeping one SIZE-byte message in
# flight, every echoed byte checked, handshakes done before the clock).
# Both servers use one throwaway certificate (EC P-256, made here with the
# openssl command) and whatever TLS their OpenSSL picks (TLS 1.3; the client
# prints the protocol and cipher).
#
#   bench/lua/tls_echo.sh [seconds]      # seconds per server and round (default 2)
#
# Environment as echo.sh: COT_BENCH_ROUNDS (4), COT_BENCH_CONNS (64),
# COT_BENCH_SIZE (4096), COT_BENCH_DEPTH (1), COTHREAD_LUA_DIR (build/lua),
# COT_BENCH_LUA (lua5.4). Prints each measurement, then per server the best
# throughput and the lowest server CPU per message of the rounds, and the
# ratios cothread / cqueues of both (the target is >= 1).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-${COT_BENCH_SECONDS:-2}}
rounds=${COT_BENCH_ROUNDS:-4}
conns=${COT_BENCH_CONNS:-64}
size=${COT_BENCH_SIZE:-4096}
depth=${COT_BENCH_DEPTH:-1}
lua_dir=${COTHREAD_LUA_DIR:-$here/../../build/lua}

. "$here/servers.sh"
if ! err=$("$lua" -e "package.cpath = '$lua_dir/?.so;' .. package.cpath; require 'cothread.ssl'" 2>&1); then
    echo "bench: $lua cannot load cothread.ssl from $lua_dir: $err" >&2
    exit 1
fi
if ! "$lua" -e 'require "cqueues.socket"; require "openssl.ssl.context"' 2>/dev/null; then
    echo "bench: $lua cannot load cqueues and luaossl (Debian: apt-get install lua-cqueues lua-luaossl)" >&2
    exit 1
fi
if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -subj "/CN=localhost" \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>"$tmp/openssl.err"; then
    cat "$tmp/openssl.err" >&2
    echo "bench: the openssl command could not make a certificate (Debian: apt-get install openssl)" >&2
    exit 1
fi
make -s -C "$here" echo-client

results=$tmp/results
: > "$results"
round=1
while [ "$round" -le "$rounds" ]; do
    for s in cothread cqueues; do
        start_server "tls_$s" "$lua_dir" "$size" "$tmp/cert.pem" "$tmp/key.pem"
        "$here/echo-client" -T "$tmp/cert.pem" -c "$conns" -s "$size" -d "$depth" -t "$seconds" \
            -p "$server_pid" -n "$s" "$server_port" > "$tmp/line"
        cat "$tmp/line"
        cat "$tmp/line" >> "$results"
        stop_server
    done
    round=$((round + 1))
done

# As echo.sh: best throughput (field 2) and lowest server CPU per message.
awk -v rounds="$rounds" '
    { mib[$1] = ($2 > mib[$1]) ? $2 : mib[$1]
      for (i = 1; i < NF; i++) if ($i == "CPU") { c = $(i + 1); if (!($1 in cpu) || c < cpu[$1]) cpu[$1] = c } }
    END {
        printf "best of %d round(s), TLS:\n", rounds
        split("cothread cqueues", names, " ")
        for (k = 1; k <= 2; k++)
            printf "  %-9s %8.1f MiB/s  %6.2f us of server CPU per message\n", names[k], mib[names[k]], cpu[names[k]]
        printf "cothread / cqueues: throughput %.2f, per server CPU second %.2f   (target >= 1)\n",
            mib["cothread"] / mib["cqueues"], cpu["cqueues"] / cpu["cothread"]
    }' "$results"
