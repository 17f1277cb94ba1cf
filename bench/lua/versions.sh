#!/usr/bin/env bash
# The switch benchmark (bench.lua's part (a)) on every Lua installed here: builds
# the module for each (release, cargo feature per version, as scripts/lua-versions
# does) and switch_floor.c against that version's headers, and prints one line per
# version: the ratios cothread/bare and floor/bare of each run and the nanoseconds
# per switch of the last, all sides measured in one process.
#
#     bench/lua/versions.sh                   # lua5.1 lua5.2 lua5.3 lua5.4 luajit luajit-joff
#     bench/lua/versions.sh lua5.1 luajit     # only these
#
# luajit-joff is luajit with its JIT off. Environment: COT_BENCH_RUNS (runs per
# version, 3), COT_BENCH_REPS (repetitions per run, best taken: 5),
# COT_BENCH_COUNT=1 (also count the instructions per switch of each side under
# callgrind, with switch.lua: noise-free on a busy machine). Targets: a ratio
# <= 0.6 on Lua 5.1-5.4, <= 1.0 on LuaJIT with its JIT on.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(lua5.1 lua5.2 lua5.3 lua5.4 luajit luajit-joff)
runs=${COT_BENCH_RUNS:-3}
reps=${COT_BENCH_REPS:-5}

# feature VERSION: the cargo feature of the build that VERSION runs.
feature() {
    case "$1" in
        lua5.1 | luajit*) echo lua51 ;;
        lua5.*) echo "lua5${1#lua5.}" ;;
    esac
}

# per_switch LUA... DIR SIDE: instructions per switch of SIDE (cothread, bare, floor),
# from two callgrind runs of switch.lua (2030 and 30 yields, 100 coroutines).
per_switch() {
    local side=${*: -1} dir=${*: -2:1} lua=("${@:1:$#-2}") ir=()
    for yields in 2030 30; do
        ir+=("$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "${lua[@]}" bench/lua/switch.lua "$dir" "$yields" "$side" 2>&1 |
            awk '/Collected/ { print $NF }')")
    done
    echo $(((ir[0] - ir[1]) / 200000))
}

# command VERSION: the interpreter and its options.
command_of() {
    case "$1" in
        luajit-joff) echo "luajit -joff" ;;
        *) echo "$1" ;;
    esac
}

status=0
for v in "${versions[@]}"; do
    read -r -a lua <<<"$(command_of "$v")"
    if ! command -v "${lua[0]}" >/dev/null; then
        echo "$v: not installed, left out"
        continue
    fi
    f=$(feature "$v")
    if ! nice -n 10 cargo build -q --release -p cothread-lua --no-default-features \
        --features "$f" --target-dir "target/$f"; then
        echo "$v: build failed"
        status=1
        continue
    fi
    dir="$root/target/$f/release/benchmod"
    mkdir -p "$dir"
    ln -sf "$root/target/$f/release/libcothread_lua.so" "$dir/cothread.so"
    # The floor, built for the version whose headers the module was built for.
    if ! cc -O2 -shared -fPIC $(pkg-config --cflags "lua5.${f#lua5}") \
        -o "$dir/switch_floor.so" bench/lua/switch_floor.c; then
        echo "$v: switch_floor.c did not build (headers missing?): no floor"
        rm -f "$dir/switch_floor.so"
    fi
    ratios=() floors=() out=
    for _ in $(seq "$runs"); do
        if ! out=$("${lua[@]}" bench/lua/bench.lua "$dir" "$reps" switch); then
            echo "$v: bench.lua failed"
            status=1
            continue 2
        fi
        ratios+=("$(awk '/^  ratio cothread\/bare/ { sub(/.*\)/, ""); print $1 }' <<<"$out")")
        floors+=("$(awk '/^  ratio floor\/bare/ { sub(/.*\)/, ""); print $1 }' <<<"$out")")
    done
    count=
    if [ "${COT_BENCH_COUNT:-0}" = 1 ]; then
        count="   instructions:"
        for side in cothread bare floor; do
            [ "$side" != floor ] || [ -e "$dir/switch_floor.so" ] || continue
            count+=" $(per_switch "${lua[@]}" "$dir" "$side") $side"
        done
    fi
    awk -v v="$v" -v ratios="${ratios[*]}" -v floors="${floors[*]}" -v count="$count" '
        /^  cothread.run/ { ours = $(NF - 1) }
        /^  coroutine.resume/ { bare = $(NF - 1) }
        /^  switch_floor/ { floor = ", " $(NF - 1) " floor" }
        /^  ratio cothread\/bare/ { target = $0; sub(/.*\(/, "", target); sub(/\).*/, "", target) }
        END { printf "%-12s cothread/bare %s (%s)   floor/bare %s   ns: %s cothread, %s bare%s%s\n",
                      v, ratios, target, floors, ours, bare, floor, count }
    ' <<<"$out"
done
exit $status
