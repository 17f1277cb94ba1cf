#!/bin/sh
# doc/examples/echo_server.cpp stops on SIGTERM: sent once the server says
# it listens (its signals are watched from then on), it ends the server and
# the program, which prints "all done". ctest runs it
# (example_echo_server_sigterm) with the program's path.
set -u
out=$(mktemp)
"$1" >"$out" 2>&1 &
pid=$!
tries=0
until grep -q '^listening on' "$out"; do
    tries=$((tries + 1))
    if [ "$tries" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then  # 60 s, or it ended
        cat "$out"
        kill "$pid" 2>/dev/null
        rm -f "$out"
        exit 1
    fi
    sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
status=$?
cat "$out"
rm -f "$out"
echo "exit status $status"
exit "$status"
