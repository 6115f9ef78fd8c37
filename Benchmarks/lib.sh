# Shell helpers shared by Benchmarks/bench.sh and Benchmarks/scale.sh (sourced, not run). The
# caller defines log, die and HOST first, and sets `trap cleanup EXIT`.

# ---------------------------------------------------------------- processes

PIDS=()

stop_pid() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid ignored SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

forget_pid() {
    local pid=$1 p rest=()
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        [[ "$p" == "$pid" ]] || rest+=("$p")
    done
    PIDS=(${rest[@]+"${rest[@]}"})
}

cleanup() {
    local pid
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do
        stop_pid "$pid"
    done
    PIDS=()
}

# ---------------------------------------------------------------- helpers

require() {
    command -v "$1" >/dev/null 2>&1 || die "'$1' not found in PATH"
}

# A port on 127.0.0.1 that nothing is listening on. The servers bind with
# SO_REUSEPORT, so binding would not detect a same-user listener; probe
# with a connect instead.
free_port() {
    local port tries
    for tries in $(seq 1 100); do
        # Below Linux's ephemeral range (32768-60999): the idle-connection run leaves thousands
        # of client ports in TIME_WAIT, which would stop a server binding one of them.
        port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
        if ! (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free port found"
}

# wait_http PID URL TIMEOUT_SECONDS
wait_http() {
    local pid=$1 url=$2 timeout=$3 deadline
    deadline=$(( $(date +%s) + timeout ))
    while :; do
        kill -0 "$pid" 2>/dev/null || return 1
        if curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then
            return 0
        fi
        (( $(date +%s) < deadline )) || return 1
        sleep 0.1
    done
}

# utime + stime of a process, in clock ticks (/proc/PID/stat fields 14 and 15).
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# utime + stime of every PostgreSQL process (its backends and helpers), in clock ticks.
postgres_ticks() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk '$2 == "(postgres)" { s += $14 + $15 } END { print s + 0 }'
}

# Peak resident set size in MB (VmHWM from /proc/PID/status).
peak_rss_mb() {
    awk '/^VmHWM:/ { printf "%.1f", $2 / 1024; found = 1 } END { if (!found) printf "n/a" }' \
        "/proc/$1/status" 2>/dev/null || printf 'n/a'
}

# Convert a wrk duration ("812.00us", "1.54ms", "2.01s", "1.00m") to ms.
to_ms() {
    awk -v v="$1" 'BEGIN {
        if (v == "") { print "n/a"; exit }
        n = v + 0
        if      (v ~ /us$/) n = n / 1000
        else if (v ~ /ms$/) n = n
        else if (v ~ /m$/)  n = n * 60000
        else if (v ~ /s$/)  n = n * 1000
        else if (v ~ /h$/)  n = n * 3600000
        printf "%.3f", n
    }'
}


# ---------------------------------------------------------------- haproxy

# start_haproxy DIR PORT UPSTREAM_PORT THREADS: haproxy (THREADS threads, keep-alive to the
# upstream) on HOST:PORT in front of HOST:UPSTREAM_PORT, its configuration and log in DIR;
# HAPROXY_PID is its process (also in PIDS). Returns 1 when it does not come up.
start_haproxy() {
    local dir=$1 port=$2 upstream=$3 threads=$4
    cat >"$dir/haproxy.cfg" <<HAPROXY
global
    nbthread $threads
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend bench
    bind $HOST:$port
    default_backend c
backend c
    server c $HOST:$upstream
HAPROXY
    "$(command -v haproxy || echo /usr/sbin/haproxy)" -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
    HAPROXY_PID=$!
    PIDS+=("$HAPROXY_PID")
    wait_http "$HAPROXY_PID" "http://$HOST:$port/" 10 || { cat "$dir/haproxy.log" >&2; return 1; }
}
