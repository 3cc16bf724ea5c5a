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
[[ -x "$binary" ]] || { echo "$binary not built (cargo build --release)" >&2; exit 2; }
session="first-rows-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT

start=$(date +%s.%N)
tmux new-session -d -s "$session" -x 160 -y 45 "$binary $(printf %q "$file")"
pid=$(tmux list-panes -t "$session" -F '#{pane_pid}')
first=""
while true; do
  screen=$(tmux capture-pane -p -t "$session" 2>/dev/null || true)
  now=$(date +%s.%N)
  # The list's title counts the runs listed: "Invocations (N)".
  if [[ -z "$first" ]] && grep -qE 'Invocations \([1-9]' <<<"$screen"; then
    first=$(echo "$now - $start" | bc -l)
  fi
  if [[ -n "$first" ]] && ! grep -q 'reading' <<<"$screen" && ! grep -q 'loading' <<<"$screen"; then
    done_at=$(echo "$now - $start" | bc -l)
    break
  fi
  if (( $(echo "$now - $start > 120" | bc -l) )); then
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
quit_start=$(date +%s.%N)
tmux send-keys -t "$session" q
# Gone, or a zombie tmux has not reaped yet (state Z): either way it has exited.
while [[ -r /proc/$pid/stat ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
  sleep 0.01
done
quit=$(echo "$(date +%s.%N) - $quit_start" | bc -l)
printf 'first rows %.2f s   file read %.2f s (CPU %.2f s)   peak RSS %.1f MiB (file pages %.1f)   quit %.2f s   (%s)\n' \
  "$first" "$done_at" "$cpu" "$(echo "$hwm / 1024" | bc -l)" "$(echo "$file_pages / 1024" | bc -l)" "$quit" "$(basename "$file")"
