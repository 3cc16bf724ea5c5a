"""Whole-process measurement (manual, not run by CI): the TUI in a real terminal under OTLP load.

Starts `toolcap-tui --listen` on an empty directory inside a private tmux server (160x48),
drives it with emit_genai.py (the OpenTelemetry Python SDK, OTLP/HTTP protobuf) as fast as the
SDK can send, and reports:
  - spans/s the client got accepted (from emit_genai.py) and spans the TUI shows at the end;
  - the TUI's CPU use while loaded (from /proc/PID/stat ticks), its peak RSS, and its RSS
    and high-water mark once every span is shown and the TUI is idle;
  - frames drawn: ratatui hides the cursor once per draw, so `ESC [?25l` in the pane output
    (tmux pipe-pane) counts frames; frames/s over the load;
  - whether the screen keeps changing (capture-pane at intervals) and how long a `j` takes
    to show (the highlighted list row moves), polled through capture-pane;
  - on quitting, the TUI's own `--stats`: the store's memory by structure, the heap in use
    and held, and the resident size (steadier than the resident size, which moves by about
    2 MiB from run to run with where the allocator's free room falls).

Loopback only; the run stops after --max-seconds. Usage:
  python3 tests/python/tui_under_load.py --binary target/release/toolcap-tui \
      --python .venv/bin/python --traces 3000
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HIDE_CURSOR = b"\x1b[?25l"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tmux:
    def __init__(self, socket_path):
        self.base = ["tmux", "-S", socket_path]

    def run(self, *args, capture=False):
        return subprocess.run(
            self.base + list(args), check=True, capture_output=True, text=capture
        ).stdout

    def screen(self, escapes=False):
        args = ["capture-pane", "-p", "-t", "load"] + (["-e"] if escapes else [])
        return self.run(*args, capture=True)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_kib(pid, field="VmRSS:"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def app_pid(pane_pid):
    """The pane runs the binary directly or under `sh -c`; find the toolcap-tui process."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        candidates = [pane_pid]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == pane_pid:
                            candidates.append(int(entry))
                except OSError:
                    pass
        for pid in candidates:
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "toolcap-tui":
                        return pid
            except OSError:
                pass
        time.sleep(0.05)
    raise SystemExit("toolcap-tui process not found")


def list_selection(screen):
    """The selected list row's text and the row under it (the next older run): the first
    line with the `›` marker is the list's cursor (the tree's cursor is further down)."""
    lines = screen.splitlines()
    for index, line in enumerate(lines):
        if "\u203a" in line[:4]:
            below = lines[index + 1] if index + 1 < len(lines) else ""
            return line.replace("\u203a", " ", 1).strip(), below.strip()
    return None, None


def key_latency(tmux):
    """Sends `j` and polls until the list cursor is on another run; returns (seconds, polls,
    whether it landed on the run that was under it)."""
    before, below = list_selection(tmux.screen())
    started = time.perf_counter()
    tmux.run("send-keys", "-t", "load", "j")
    polls = 0
    while time.perf_counter() - started < 2:
        polls += 1
        now, _ = list_selection(tmux.screen())
        if now != before:
            return time.perf_counter() - started, polls, now == below
    return None, polls, False


def wait_until_idle(pid, seconds=30):
    """Waits until the TUI uses no CPU time for half a second: what it builds once the runs are
    listed (search indexes) is then built, and counted in its memory."""
    before = cpu_ticks(pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if now == before:
            return
        before = now


def spans_shown(screen):
    found = re.search(r"(\d+) spans", screen.splitlines()[-2] if screen else "")
    return int(found.group(1)) if found else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--python", required=True, help="a Python with the OpenTelemetry SDK")
    parser.add_argument("--traces", type=int, default=3000, help="traces the client sends")
    parser.add_argument("--clients", type=int, default=1, help="concurrent client processes")
    parser.add_argument("--batch", type=int, default=512, help="spans per export request")
    parser.add_argument("--max-seconds", type=float, default=60)
    parser.add_argument(
        "--tmux-socket",
        help="the tmux server's socket path (default: one in the run's own temporary "
        "directory, which goes with it: tmux leaves its socket file behind)",
    )
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="tui-load-")
    empty = os.path.join(work, "traces")
    os.mkdir(empty)
    frames_log = os.path.join(work, "pane.out")
    http, grpc = free_port(), free_port()
    tmux = Tmux(args.tmux_socket or os.path.join(work, "tmux"))
    stats_file = os.path.join(work, "stats.txt")
    command = (f"exec {args.binary} --stats --listen=127.0.0.1:{http} --grpc 127.0.0.1:{grpc} "
               f"{empty} 2>{stats_file}")
    tmux.run("new-session", "-d", "-s", "load", "-x", "160", "-y", "48", command)
    clients = []
    try:
        tmux.run("pipe-pane", "-o", "-t", "load", f"cat >> {frames_log}")
        pane_pid = int(tmux.run("list-panes", "-t", "load", "-F", "#{pane_pid}", capture=True))
        pid = app_pid(pane_pid)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", http), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        time.sleep(0.5)
        idle_frames = open(frames_log, "rb").read().count(HIDE_CURSOR)
        ticks0, t0 = cpu_ticks(pid), time.monotonic()
        clients = [
            subprocess.Popen(
                [
                    args.python, os.path.join(HERE, "emit_genai.py"),
                    "--http-endpoint", f"http://127.0.0.1:{http}/v1/traces", "--modes", "http",
                    "--traces-per-mode", str(args.traces), "--batch", str(args.batch),
                    "--ids-out", os.path.join(work, f"ids-{n}.jsonl"),
                ],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
            for n in range(args.clients)
        ]
        screens, changes, peak_rss, latencies, samples = [], 0, 0, [], []
        next_key = t0 + 3
        def running():
            return any(c.poll() is None for c in clients)

        while running() and time.monotonic() - t0 < args.max_seconds:
            time.sleep(0.5)
            screen = tmux.screen()
            if screens and screen != screens[-1]:
                changes += 1
            screens.append(screen)
            peak_rss = max(peak_rss, rss_kib(pid))
            frames = open(frames_log, "rb").read().count(HIDE_CURSOR)
            samples.append((time.monotonic(), cpu_ticks(pid), frames, spans_shown(screen)))
            if time.monotonic() >= next_key and len(latencies) < 5:
                latencies.append(key_latency(tmux))
                next_key = time.monotonic() + 2
        loaded_seconds = time.monotonic() - t0
        ticks1 = cpu_ticks(pid)
        for c in clients:
            if c.poll() is None:
                c.kill()
        outputs = [c.communicate()[0].strip() for c in clients]
        loaded_frames = open(frames_log, "rb").read().count(HIDE_CURSOR) - idle_frames
        wait_until_idle(pid)
        final = tmux.screen()
        resident_after, high_water = rss_kib(pid), rss_kib(pid, "VmHWM:")
        anonymous, file_pages = rss_kib(pid, "RssAnon:"), rss_kib(pid, "RssFile:")
        hz = os.sysconf("SC_CLK_TCK")
        for n, output in enumerate(outputs):
            print(f"client {n}:", output)
        print(f"loaded for {loaded_seconds:.1f} s; TUI CPU {100 * (ticks1 - ticks0) / hz / loaded_seconds:.0f} % "
              f"of one core; peak RSS {peak_rss / 1024:.1f} MiB")
        print(f"resident once every span is shown and the TUI is idle: {resident_after / 1024:.1f} MiB "
              f"(high-water mark {high_water / 1024:.1f} MiB; anonymous {anonymous / 1024:.1f} MiB, "
              f"file pages {file_pages / 1024:.1f} MiB)")
        print(f"frames drawn under load: {loaded_frames} ({loaded_frames / loaded_seconds:.1f} frames/s)")
        # The window in which spans were arriving: from the last sample before the first span
        # showed up to the first sample that shows the final count.
        last = samples[-1][3] if samples else 0
        first_i = max(0, next((i for i, x in enumerate(samples) if x[3] > 0), 0) - 1)
        done_i = next((i for i, x in enumerate(samples) if x[3] == last), len(samples) - 1)
        if done_i > first_i:
            (ta, ca, fa, sa), (tb, cb, fb, sb) = samples[first_i], samples[done_i]
            span = tb - ta
            print(f"while spans arrived ({span:.1f} s, {sb - sa} spans, {(sb - sa) / span:.0f} spans/s shown): "
                  f"TUI CPU {100 * (cb - ca) / hz / span:.0f} % of one core, "
                  f"{fb - fa} frames ({(fb - fa) / span:.1f} frames/s)")
        print(f"screen captures every 0.5 s: {len(screens)}, changed from the previous one: {changes}")
        for seconds, polls, onto_next in latencies:
            shown = "not seen within 2 s" if seconds is None else f"{seconds * 1000:.1f} ms"
            print(f"key j: cursor moved {'to the next run' if onto_next else 'elsewhere'} "
                  f"after {shown} ({polls} capture-pane polls)")
        print("final status lines:")
        for line in final.splitlines()[-3:]:
            print("  ", line.rstrip())
        tmux.run("send-keys", "-t", "load", "q")
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        print("the TUI's --stats on quitting:")
        print(open(stats_file).read().rstrip() or "   (nothing: it did not quit in 10 s)")
    finally:
        for c in clients:
            if c.poll() is None:
                c.kill()
        subprocess.run(tmux.base + ["kill-server"], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
