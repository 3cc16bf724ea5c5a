#!/usr/bin/env bash
# Times the TUI on one big trace file as a user sees it, in a real terminal (tmux):
# seconds until the first runs are listed, seconds until the file is read (the status bar's
# "reading" progress is gone), the TUI's peak resident memory then (and how much of what is
# resident is file pages: the binary's and libraries' code, shared with the page cache, which
# varies by a MiB or so with how the page cache holds the binary), and seconds from the quit
# key until the process is gone.
#
# Usage: scripts/first_rows.sh [BINARY] FILE
#   BINARY defaults to target/release/toolcap-tui (build it with `cargo build --release`).
set -euo pipefail

binary=target/release/toolcap-tui
if [[ $# -gt 1 ]]; then
  binary=$1
  shift
fi
file=$1
[[ -f "$binary" && -x "$binary" ]] || { echo "$binary: not a built program (cargo build --release)" >&2; exit 2; }
session="first-rows-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT

# Times in microseconds from bash's own clock, and the screen matched with bash's own patterns:
# the poll starts no process but tmux's client and sleep, so it takes little of the CPU the TUI
# is measured on (date, grep and bc at every poll took a noticeable share of 2 cores).
micros() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
start=$(micros)
tmux new-session -d -s "$session" -x 160 -y 45 "$binary $(printf %q "$file")"
pid=$(tmux list-panes -t "$session" -F '#{pane_pid}')
first=""
while true; do
  screen=$(tmux capture-pane -p -t "$session" 2>/dev/null || true)
  now=$(micros)
  # The list's title counts the runs listed: "Invocations (N)".
  if [[ -z "$first" && $screen =~ Invocations\ \([1-9] ]]; then
    first=$((now - start))
  fi
  if [[ -n "$first" && $screen != *reading* && $screen != *loading* ]]; then
    done_at=$((now - start))
    break
  fi
  if ((now - start > 120000000)); then
    echo "gave up after 120 s; last screen:" >&2
    echo "$screen" >&2
    exit 1
  fi
  sleep 0.02
done
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
# CPU time the TUI spent until then (user and system, all threads): the work, which another
# load on the machine does not change the way it changes the clock.
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$pid/stat")
file_pages=$(awk '/RssFile/ {print $2}' "/proc/$pid/status")
quit_start=$(micros)
tmux send-keys -t "$session" q
# Gone, or a zombie tmux has not reaped yet (state Z): either way it has exited.
while [[ -r /proc/$pid/stat ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
  sleep 0.01
done
quit=$(($(micros) - quit_start))
printf 'first rows %.2f s   file read %.2f s (CPU %.2f s)   peak RSS %.1f MiB (file pages %.1f)   quit %.2f s   (%s)\n' \
  "$(echo "$first / 1000000" | bc -l)" "$(echo "$done_at / 1000000" | bc -l)" "$cpu" \
  "$(echo "$hwm / 1024" | bc -l)" "$(echo "$file_pages / 1024" | bc -l)" \
  "$(echo "$quit / 1000000" | bc -l)" "$(basename "$file")"
