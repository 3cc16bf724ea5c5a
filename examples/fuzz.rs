//! A structured mutation fuzzer for the targets in `toolcap::fuzzing`, on the stable toolchain.
//!
//! Inputs start from the fixture corpus (tests/fixtures) and are mutated by operations chosen
//! with `arbitrary::Unstructured` over pseudo-random bytes: byte and bit edits, inserted
//! "interesting" values and JSON/protobuf tokens, cut, duplicated or spliced ranges. Without
//! compiler coverage, feedback is behavioural: an input whose outcome (panicked or not, and
//! how long it took, in coarse buckets) is new for the target joins the pool.
//!
//! A panic is saved to `OUT/crashes/TARGET/HASH`; an input still running after `--hang-secs`
//! is saved to `OUT/hangs/TARGET/HASH` and the process exits 3 (a hang cannot be interrupted
//! safely). Usage (see scripts/fuzz.sh):
//!
//! ```text
//! cargo run --example fuzz -- [--target NAME]... [--seconds N] [--out DIR] [--seed N] [--list]
//! ```

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbitrary::Unstructured;
use toolcap::fuzzing::{self, Target};

/// Inputs larger than this are cut back: big inputs slow every execution for little gain.
const MAX_INPUT_BYTES: usize = 512 * 1024;
/// Pool size per target beyond the seeds.
const MAX_POOL: usize = 4096;

const INTERESTING_BYTES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"\n",
    b"\r\n",
    b"\\u0000",
    b"\\ud800",
    b"null",
    b"true",
    b"-1",
    b"1e999",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"0.0",
    b"\"traceId\"",
    b"\"spanId\"",
    b"\"parentSpanId\"",
    b"\"resourceSpans\"",
    b"\"scopeSpans\"",
    b"\"spans\"",
    b"\"attributes\"",
    b"\"startTimeUnixNano\"",
    b"\"endTimeUnixNano\"",
    b"\"role\"",
    b"\"tool_calls\"",
    b"\"content\"",
    b"\"type\"",
    b"\"id\"",
    b"\"name\"",
    b"\"arguments\"",
    b"\"messages\"",
    b"\x1b[31m",
    b"\xe2\x80\xae",
    b"\xf3\xa0\x80\x81",
    b"\xff\xff\xff\xff\x0f",
    b"\x00",
    b"\x1f\x8b\x08\x00",
];

/// splitmix64: the runner's only randomness; `--seed` makes a run repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

fn range(u: &mut Unstructured, len: usize) -> (usize, usize) {
    if len == 0 {
        return (0, 0);
    }
    let start = u.choose_index(len).unwrap_or(0);
    let max = (len - start).min(4096);
    let size = u.int_in_range(0..=max).unwrap_or(0);
    (start, start + size)
}

/// Applies one to eight mutations chosen by `u`.
fn mutate(input: &mut Vec<u8>, pool: &[Vec<u8>], u: &mut Unstructured) {
    let rounds = u.int_in_range(1..=8u8).unwrap_or(1);
    for _ in 0..rounds {
        let len = input.len();
        let at = if len == 0 {
            0
        } else {
            u.choose_index(len + 1).unwrap_or(0)
        };
        match u.int_in_range(0..=9u8).unwrap_or(0) {
            0 if len > 0 => {
                let i = at.min(len - 1);
                input[i] ^= 1 << u.int_in_range(0..=7u8).unwrap_or(0);
            }
            1 if len > 0 => {
                let i = at.min(len - 1);
                input[i] = u.arbitrary().unwrap_or(0);
            }
            2 => {
                let token = u.choose(INTERESTING_BYTES).copied().unwrap_or(b"{");
                input.splice(at..at, token.iter().copied());
            }
            3 => {
                let (start, end) = range(u, len);
                input.drain(start..end);
            }
            4 => {
                let (start, end) = range(u, len);
                let copy = input[start..end].to_vec();
                input.splice(at..at, copy);
            }
            5 if !pool.is_empty() => {
                // Splice: the tail of another input after our head.
                let other = u.choose(pool).cloned().unwrap_or_default();
                let from = if other.is_empty() {
                    0
                } else {
                    u.choose_index(other.len()).unwrap_or(0)
                };
                input.truncate(at);
                input.extend_from_slice(&other[from..]);
            }
            6 => input.truncate(at),
            7 => {
                // Repeat a small range many times (deep nesting, long runs).
                let (start, end) = range(u, len);
                let piece = input[start..end.min(start + 16)].to_vec();
                let times = u.int_in_range(2..=512u16).unwrap_or(2);
                let mut repeated = Vec::new();
                for _ in 0..times {
                    repeated.extend_from_slice(&piece);
                }
                input.splice(at..at, repeated);
            }
            8 if len >= 8 => {
                // Overwrite with an interesting integer (lengths, varints, offsets).
                let value: u64 = *u
                    .choose(&[
                        0,
                        1,
                        0x7f,
                        0x80,
                        0xff,
                        0xffff,
                        u64::from(u32::MAX),
                        u64::MAX,
                    ])
                    .unwrap_or(&0);
                let i = at.min(len - 8);
                input[i..i + 8].copy_from_slice(&value.to_le_bytes());
            }
            _ => {
                let byte: u8 = u.arbitrary().unwrap_or(b' ');
                input.insert(at, byte);
            }
        }
        input.truncate(MAX_INPUT_BYTES);
    }
}

fn hash(data: &[u8]) -> String {
    // FNV-1a: names saved inputs; collisions only merge file names.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in data {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn save(dir: &Path, data: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join(hash(data));
    let _ = std::fs::write(&path, data);
    path
}

struct Report {
    target: String,
    executions: u64,
    seconds: f64,
    seeds: usize,
    pool: usize,
    crashes: Vec<(PathBuf, String)>,
}

/// What the watchdog needs to know about the input being run now.
struct Running {
    target: String,
    input: Vec<u8>,
    started: Instant,
}

fn fuzz_target(
    target: &Target,
    fixtures: &Path,
    out: &Path,
    budget: Duration,
    rng: &mut Rng,
    running: &Mutex<Option<Running>>,
    last_panic: &Mutex<String>,
) -> Report {
    let seeds = fuzzing::seeds(fixtures, target.seed_encoding);
    let mut pool: Vec<Vec<u8>> = seeds.clone();
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    let mut outcomes: HashSet<(bool, u32, usize)> = HashSet::new();
    let mut crashes = Vec::new();
    let mut seen_crashes: HashSet<String> = HashSet::new();
    let started = Instant::now();
    let mut executions = 0u64;
    let mut index = 0usize;
    while started.elapsed() < budget {
        let input = if index < seeds.len() {
            seeds[index].clone()
        } else {
            let entropy = rng.bytes(256);
            let mut u = Unstructured::new(&entropy);
            let mut input = u.choose(&pool).cloned().unwrap_or_default();
            mutate(&mut input, &pool, &mut u);
            input
        };
        index += 1;
        *running.lock().unwrap() = Some(Running {
            target: target.name.clone(),
            input: input.clone(),
            started: Instant::now(),
        });
        let one = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| target.run(&input)));
        let micros = one.elapsed().as_micros().max(1);
        *running.lock().unwrap() = None;
        executions += 1;
        let panicked = outcome.is_err();
        if panicked {
            let message = last_panic.lock().unwrap().clone();
            // One saved input per distinct panic location.
            let key = message.lines().next().unwrap_or_default().to_string();
            if seen_crashes.insert(key) {
                let path = save(&out.join("crashes").join(&target.name), &input);
                eprintln!("  {}: PANIC {} -> {}", target.name, message, path.display());
                crashes.push((path, message));
            }
        }
        let time_bucket = 128 - micros.leading_zeros();
        let size_bucket = input.len().checked_ilog2().unwrap_or(0) as usize;
        if outcomes.insert((panicked, time_bucket, size_bucket)) && pool.len() < MAX_POOL {
            pool.push(input);
        }
    }
    Report {
        target: target.name.clone(),
        executions,
        seconds: started.elapsed().as_secs_f64(),
        seeds: seeds.len(),
        pool: pool.len(),
        crashes,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut names: Vec<String> = Vec::new();
    let mut seconds = 60u64;
    let mut hang_secs = 10u64;
    let mut out = PathBuf::from("target/fuzz");
    let mut seed = 0x5eed_u64;
    let mut list = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--target" => names.extend(args.next()),
            "--seconds" => seconds = args.next().and_then(|v| v.parse().ok()).unwrap_or(60),
            "--hang-secs" => hang_secs = args.next().and_then(|v| v.parse().ok()).unwrap_or(10),
            "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).unwrap_or(seed),
            "--list" => list = true,
            other => {
                eprintln!("fuzz: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let all = fuzzing::targets();
    if list {
        for target in &all {
            println!("{}", target.name);
        }
        return;
    }
    let chosen: Vec<&Target> = if names.is_empty() {
        all.iter().collect()
    } else {
        names
            .iter()
            .map(|name| {
                all.iter().find(|t| &t.name == name).unwrap_or_else(|| {
                    eprintln!("fuzz: no target {name} (try --list)");
                    std::process::exit(2)
                })
            })
            .collect()
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");

    let last_panic = Arc::new(Mutex::new(String::new()));
    let recorder = last_panic.clone();
    std::panic::set_hook(Box::new(move |info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        *recorder.lock().unwrap() = format!("{location}: {payload}");
    }));

    let running: Arc<Mutex<Option<Running>>> = Arc::new(Mutex::new(None));
    let watched = running.clone();
    let hangs = out.join("hangs");
    let executions = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let guard = watched.lock().unwrap();
            if let Some(now) = guard.as_ref()
                && now.started.elapsed() > Duration::from_secs(hang_secs)
            {
                let path = save(&hangs.join(&now.target), &now.input);
                eprintln!(
                    "fuzz: HANG in {} (over {hang_secs} s) -> {}",
                    now.target,
                    path.display()
                );
                std::process::exit(3);
            }
        }
    });

    let mut rng = Rng(seed);
    let mut reports = Vec::new();
    for target in chosen {
        eprintln!("fuzz: {} for {seconds} s", target.name);
        let report = fuzz_target(
            target,
            &fixtures,
            &out,
            Duration::from_secs(seconds),
            &mut rng,
            &running,
            &last_panic,
        );
        executions.fetch_add(report.executions, Ordering::Relaxed);
        reports.push(report);
    }
    println!("target\texecutions\tminutes\texec/s\tseeds\tpool\tcrashes");
    let mut crashed = false;
    for report in &reports {
        println!(
            "{}\t{}\t{:.2}\t{:.0}\t{}\t{}\t{}",
            report.target,
            report.executions,
            report.seconds / 60.0,
            report.executions as f64 / report.seconds.max(0.001),
            report.seeds,
            report.pool,
            report.crashes.len()
        );
        crashed |= !report.crashes.is_empty();
    }
    for report in &reports {
        for (path, message) in &report.crashes {
            println!("crash\t{}\t{}\t{}", report.target, path.display(), message);
        }
    }
    if crashed {
        std::process::exit(1);
    }
}
