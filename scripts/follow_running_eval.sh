#!/usr/bin/env bash
# What following a running Inspect eval costs the TUI: each BINARY watches an empty directory
# in a real terminal (tmux, 160×45) while scripts/running_eval.py writes an N-sample eval there
# with Inspect's own recorder; once the eval is done and every TUI lists its N runs, prints each
# one's CPU time (user and system, all threads) and peak resident memory.
#
# Usage: scripts/follow_running_eval.sh N BINARY...   (needs the test venv: .ci/run makes it)
set -euo pipefail
cd "$(dirname "$0")/.."
count=$1
shift
dir=$(mktemp -d)
sessions=()
trap 'for s in "${sessions[@]}"; do tmux kill-session -t "$s" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
pids=()
for binary in "$@"; do
  session="follow-eval-$$-${#sessions[@]}"
  tmux new-session -d -s "$session" -x 160 -y 45 "$binary $(printf %q "$dir")"
  sessions+=("$session")
  pids+=("$(tmux list-panes -t "$session" -F '#{pane_pid}')")
done
started=$(date +%s.%N)
.venv/bin/python scripts/running_eval.py "$dir" "$count" >/dev/null 2>&1
echo "eval of $count samples written in $(echo "$(date +%s.%N) - $started" | bc -l | cut -c1-5) s"
for i in "${!sessions[@]}"; do
  until tmux capture-pane -p -t "${sessions[$i]}" | grep -q "Invocations ($count)" \
    && ! tmux capture-pane -p -t "${sessions[$i]}" | grep -q 'reading'; do
    sleep 0.1
  done
done
for i in "${!sessions[@]}"; do
  pid=${pids[$i]}
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$pid/stat")
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  echo "$(($i + 1)): ${*:$i+1:1}: CPU ${cpu} s, peak RSS $(echo "$hwm / 1024" | bc -l | cut -c1-5) MiB"
done
