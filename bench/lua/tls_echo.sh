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

server_prefix=tls_ server_args="$tmp/cert.pem $tmp/key.pem"
run_rounds "cothread cqueues" -T "$tmp/cert.pem"
report ", TLS" "cothread cqueues"
