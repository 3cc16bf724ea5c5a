#!/usr/bin/env bash
# Side-by-side load figures for the scale corpora (see scripts/make_corpora.py):
# jq's span-name walk, `dump`, `dump --json` and `dump --stats`: wall time, peak RSS and the ratios
# to jq and to the file size, in one run on the same machine.
#
# Usage: scripts/compare_jq.sh [BINARY] FILE...
#   BINARY defaults to target/release/toolcap-tui (build it with `cargo build --release`).
set -euo pipefail

binary=target/release/toolcap-tui
if [[ $# -gt 0 && -f "$1" && -x "$1" && ! "$1" =~ \.jsonl?$ ]]; then
  binary=$1
  shift
fi
[[ $# -gt 0 ]] || { echo "usage: $0 [BINARY] FILE..." >&2; exit 2; }
[[ -f "$binary" && -x "$binary" ]] || { echo "$binary: not a built program (cargo build --release)" >&2; exit 2; }

# Runs a command under /usr/bin/time -v; prints "seconds peak_kib".
measure() {
  local report
  report=$(mktemp)
  /usr/bin/time -v -o "$report" "$@" >/dev/null 2>/dev/null || true
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$report")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$report")
  rm -f "$report"
  # m:ss.cc or h:mm:ss -> seconds
  awk -v t="$wall" -v r="$rss" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f %d\n", s, r }'
}

printf '%-22s %-12s %8s %9s %8s %8s\n' file command seconds peak_MiB x_jq rss/file
for file in "$@"; do
  size=$(stat -c %s "$file")
  name=$(basename "$file")
  read -r jq_s jq_rss < <(measure jq '.resourceSpans[].scopeSpans[].spans[].name' "$file")
  printf '%-22s %-12s %8s %9.1f %8s %8.2f\n' "$name" jq "$jq_s" "$(echo "$jq_rss/1024" | bc -l)" 1.0 "$(echo "$jq_rss*1024/$size" | bc -l)"
  for mode in dump "dump --json"; do
    # shellcheck disable=SC2086
    read -r s rss < <(measure "$binary" $mode "$file")
    ratio=$(echo "if ($s > 0) $jq_s/$s else 0" | bc -l)
    printf '%-22s %-12s %8s %9.1f %8.2f %8.2f\n' "$name" "$mode" "$s" "$(echo "$rss/1024" | bc -l)" "$ratio" "$(echo "$rss*1024/$size" | bc -l)"
  done
done
