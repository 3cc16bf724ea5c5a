#!/usr/bin/env bash
# The TUI under live data, as a user runs it: `toolcap-tui --listen` in a real terminal (tmux),
# fed 100,000 spans of ~650 bytes over loopback OTLP/HTTP, 500 per request (the live example's
# `send` mode: one keep-alive connection, as an SDK's exporter holds, each request answered
# before the next is written and the next made ready meanwhile, so the pace is the TUI's).
# First a warm-up of 500 spans (50 runs), so the receiver, the parser and the views have run
# once: the resident size then is what the TUI costs before live data. Prints
#   - ingest: seconds from the first request until every run is listed, the spans per second
#     that makes, and seconds from the last request's answer until every run is listed;
#   - CPU: the TUI's and the sender's CPU seconds over those 100,000 spans: both share the
#     machine's cores, so the spans per second above belong to the pair, and the TUI's CPU
#     seconds per 100,000 spans are its own share;
#   - memory: the resident size before and once every run is listed and the TUI is idle, the
#     peak, and the growth per 100,000 spans; then, once it quits, the TUI's own `--stats` (the
#     store by structure, the heap in use and held).
#
# Usage: scripts/live_tui.sh [BINARY] [SENDER]
#   BINARY defaults to target/release/toolcap-tui, SENDER to target/release/examples/live_memory
#   (build both with `cargo build --release --example live_memory --bin toolcap-tui`).
#   SMAPS=1 also lists the biggest mappings.
set -euo pipefail

binary=${1:-target/release/toolcap-tui}
sender=${2:-target/release/examples/live_memory}
for built in "$binary" "$sender"; do
  [[ -f "$built" && -x "$built" ]] || { echo "$built: not a built program" >&2; exit 2; }
done
port=$((20000 + RANDOM % 20000))
session="live-memory-$$"
workdir=$(mktemp -d)
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$workdir"' EXIT

warm_up=500
spans=${TOOLCAP_LIVE_SPANS:-100000}

# An empty directory as the source, so only what arrives is loaded; the report of `--stats`
# goes beside it.
mkdir "$workdir/traces"
tmux new-session -d -s "$session" -x 160 -y 45 \
  "exec $binary --stats --listen=127.0.0.1:$port --grpc 127.0.0.1:$((port + 1)) $workdir/traces 2>$workdir/stats.txt"
pid=$(tmux list-panes -t "$session" -F '#{pane_pid}')
for _ in $(seq 1 200); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done

micros() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
# Waits until the list shows `runs` invocations (traces are ten spans each), noting when in
# `listed_at` (microseconds), then until the TUI is idle (no CPU time used for half a second):
# the search indexes it builds once the runs are listed are then built, and counted. The poll
# matches with bash's own patterns, so it starts no process but tmux's client and sleep.
listed_at=0
listed_ticks=0
wait_for_runs() {
  local runs=$1 screen
  for _ in $(seq 1 3000); do
    screen=$(tmux capture-pane -p -t "$session")
    [[ $screen == *"Invocations ($runs)"* ]] && break
    sleep 0.02
  done
  listed_at=$(micros)
  listed_ticks=$(cpu_ticks)
  if [[ $screen != *"Invocations ($runs)"* ]]; then
    echo "the list never showed $runs runs in 60 s; last screen:" >&2
    echo "$screen" >&2
    exit 1
  fi
  [[ $screen =~ Invocations\ \([^\)]*\) ]] && echo "${BASH_REMATCH[0]}"
  wait_until_idle
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
wait_until_idle() {
  local before now
  before=$(cpu_ticks)
  for _ in $(seq 1 60); do
    sleep 0.5
    now=$(cpu_ticks)
    [[ "$now" == "$before" ]] && return
    before=$now
  done
}
resident_kib() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }

TOOLCAP_LIVE_SPANS=$warm_up "$sender" send "127.0.0.1:$port" 0 >/dev/null
wait_for_runs $((warm_up / 10)) >/dev/null
before=$(resident_kib)
started_ticks=$(cpu_ticks)
started_at=$(micros)
TOOLCAP_LIVE_SPANS=$spans /usr/bin/time -o "$workdir/sender-cpu" -f '%U %S' \
  "$sender" send "127.0.0.1:$port" "$warm_up"
answered_at=$(micros)
wait_for_runs $(((warm_up + spans) / 10))
after=$(resident_kib)
awk -v s="$started_at" -v a="$answered_at" -v l="$listed_at" -v n="$spans" 'BEGIN {
  printf "sent in %.2f s; every run listed %.2f s after the first request (%.0f spans/s), %.2f s after the last one was answered\n",
    (a - s) / 1e6, (l - s) / 1e6, n / ((l - s) / 1e6), (l - a) / 1e6 }'
read -r sender_user sender_system < "$workdir/sender-cpu"
awk -v t="$((listed_ticks - started_ticks))" -v hz="$(getconf CLK_TCK)" -v u="$sender_user" \
  -v y="$sender_system" -v n="$spans" 'BEGIN {
  printf "CPU until listed: the TUI %.2f s (%.2f s per 100,000 spans), the sender %.2f s\n",
    t / hz, t / hz * 100000 / n, u + y }'
awk -v b="$before" -v a="$after" -v n="$spans" 'BEGIN {
  printf "before: %.1f MiB (after a warm-up of 500 spans)\n", b / 1024
  printf "after:  %.1f MiB\n", a / 1024
  printf "growth: %.1f MiB per 100,000 spans\n", (a - b) / 1024 * 100000 / n }'
awk '/VmHWM|RssAnon|RssFile/ {printf "%s %.1f MiB\n", $1, $2 / 1024}' "/proc/$pid/status"
[[ -n "${SMAPS:-}" ]] && awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6} /^Rss:/{rss[name]+=$2} END{for(n in rss) if(rss[n]>300) printf "%8d KiB %s\n", rss[n], n}' "/proc/$pid/smaps" | sort -rn | head -8
tmux send-keys -t "$session" q
for _ in $(seq 1 200); do
  [[ -e "/proc/$pid" ]] || break
  sleep 0.05
done
echo "the TUI's --stats on quitting:"
cat "$workdir/stats.txt"
