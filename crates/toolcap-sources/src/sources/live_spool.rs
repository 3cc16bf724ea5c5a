//! The bounded temporary spool of a live source (`--listen`, an attached `serve` feed): what
//! arrives is appended to segment files in a private temporary directory, and spans are built
//! from those bytes with their payloads as byte ranges into the segment, exactly like a trace
//! file's. The skeleton stays in memory; payload text is read back only when shown.
//!
//! Bounded: past the cap the oldest segment is deleted, and a payload that lived there reads
//! as "no longer kept" (never as other bytes: segment names are never reused and segments are
//! only appended to). The directory is owner-only and removed when the spool is dropped.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::formats::otlp::payload_range;

/// Bytes a live spool keeps by default before it drops its oldest segment.
pub const DEFAULT_LIVE_SPOOL_BYTES: u64 = 1 << 30;

/// Segments per cap: what one eviction drops is an eighth of what is kept.
const SEGMENTS_PER_CAP: u64 = 8;

/// Where a piece of bytes was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spooled {
    pub segment: Arc<PathBuf>,
    pub offset: u64,
}

struct Segment {
    path: Arc<PathBuf>,
    len: u64,
}

/// A running spool; dropping it removes its directory.
pub struct LiveSpool {
    dir: PathBuf,
    cap_bytes: u64,
    segment_bytes: u64,
    /// Oldest first; the last is the one being written.
    segments: VecDeque<Segment>,
    writing: Option<File>,
    kept_bytes: u64,
    next_segment: u64,
}

impl LiveSpool {
    /// Creates the spool's private directory under `parent`.
    pub fn create_in(parent: &Path, cap_bytes: u64) -> std::io::Result<Self> {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
        let dir = parent.join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            hex::encode(random)
        ));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        std::fs::create_dir_all(parent)?;
        remove_abandoned_spools(parent);
        builder.create(&dir)?;
        let cap_bytes = cap_bytes.max(1);
        payload_range::note_expiring_dir(
            &dir,
            format!(
                "no longer kept: the live spool keeps the newest {}",
                human_bytes(cap_bytes)
            ),
        );
        Ok(LiveSpool {
            dir,
            cap_bytes,
            segment_bytes: cap_bytes.div_ceil(SEGMENTS_PER_CAP),
            segments: VecDeque::new(),
            writing: None,
            kept_bytes: 0,
            next_segment: 0,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Segment files now on disk, oldest first.
    pub fn segments(&self) -> impl Iterator<Item = &Path> {
        self.segments.iter().map(|segment| segment.path.as_path())
    }

    /// Appends `bytes` (one request body or feed line) whole to one segment, then drops the
    /// oldest segments while more than the cap is kept (never the one just written).
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<Spooled> {
        let len = bytes.len() as u64;
        let current_len = self.segments.back().map_or(0, |s| s.len);
        if self.writing.is_none() || (current_len > 0 && current_len + len > self.segment_bytes) {
            self.open_segment()?;
        }
        let (Some(file), Some(segment)) = (self.writing.as_mut(), self.segments.back_mut()) else {
            return Err(std::io::Error::other("the live spool has no open segment"));
        };
        let spooled = Spooled {
            segment: segment.path.clone(),
            offset: segment.len,
        };
        if let Err(e) = file.write_all(bytes) {
            // A partial write leaves bytes no range points at; start clean after them.
            self.writing = None;
            return Err(e);
        }
        segment.len += len;
        self.kept_bytes += len;
        while self.kept_bytes > self.cap_bytes && self.segments.len() > 1 {
            if let Some(oldest) = self.segments.pop_front() {
                self.kept_bytes -= oldest.len;
                let _ = std::fs::remove_file(oldest.path.as_path());
            }
        }
        Ok(spooled)
    }

    fn open_segment(&mut self) -> std::io::Result<()> {
        self.next_segment += 1;
        let path = self
            .dir
            .join(format!("segment-{:06}.otlp", self.next_segment));
        let file = crate::system::owner_only_file()
            .create_new(true)
            .append(true)
            .open(&path)?;
        self.writing = Some(file);
        self.segments.push_back(Segment {
            path: Arc::new(path),
            len: 0,
        });
        Ok(())
    }
}

impl Drop for LiveSpool {
    fn drop(&mut self) {
        self.writing = None;
        let _ = std::fs::remove_dir_all(&self.dir);
        payload_range::note_expiring_dir(
            &self.dir,
            "no longer kept: the live source has stopped and its temporary spool is removed".into(),
        );
    }
}

/// A live source's spool, or why it has none: then payloads stay in memory, and the user is
/// told once per run of failures.
pub struct Keeper {
    spool: Option<LiveSpool>,
    warning: Option<String>,
    failing: bool,
}

impl Keeper {
    /// A keeper with a new spool of `cap_bytes` under `parent` (`None`: [`default_parent`]).
    pub fn new(cap_bytes: u64, parent: Option<&Path>) -> Self {
        let parent = parent.map_or_else(default_parent, Path::to_path_buf);
        match LiveSpool::create_in(&parent, cap_bytes) {
            Ok(spool) => Keeper::with(spool),
            Err(e) => Keeper {
                spool: None,
                warning: Some(format!(
                    "cannot create the live spool in {} ({e}): payloads are held in memory",
                    parent.display()
                )),
                failing: true,
            },
        }
    }

    pub fn with(spool: LiveSpool) -> Self {
        Keeper {
            spool: Some(spool),
            warning: None,
            failing: false,
        }
    }

    /// Writes `bytes` to the spool; `None` when they are kept in memory only.
    pub fn keep(&mut self, bytes: &[u8]) -> Option<Spooled> {
        match self.spool.as_mut()?.append(bytes) {
            Ok(spooled) => {
                self.failing = false;
                Some(spooled)
            }
            Err(e) => {
                if !self.failing {
                    self.warning = Some(format!(
                        "cannot write the live spool ({e}): payloads are held in memory"
                    ));
                }
                self.failing = true;
                None
            }
        }
    }

    /// What the user has not been told yet about the spool.
    pub fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    pub fn spool(&self) -> Option<&LiveSpool> {
        self.spool.as_ref()
    }
}

/// Prefix of a spool directory's name, followed by the owning process id.
const DIR_PREFIX: &str = "toolcap-live-";

/// Where spools go by default: `$TMPDIR` when the user set it; else the user's cache directory
/// (`~/.cache/toolcap-tui/live` on Linux), since `/tmp` is often a RAM-backed tmpfs and a spool
/// there would hold in memory what it is meant to keep out of it; else the system's temporary
/// directory.
pub fn default_parent() -> PathBuf {
    if std::env::var_os("TMPDIR").is_some_and(|dir| !dir.is_empty()) {
        return std::env::temp_dir();
    }
    directories::ProjectDirs::from("", "", "toolcap-tui")
        .map_or_else(std::env::temp_dir, |dirs| dirs.cache_dir().join("live"))
}

/// Removes spools left behind by processes that no longer run (a crash or a kill skips the
/// removal on drop). Only directories named as ours whose owner is gone are touched.
fn remove_abandoned_spools(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let owner = name
            .to_str()
            .and_then(|name| name.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = owner
            && !process_runs(pid)
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` may still run: when that cannot be told, it is taken to run.
fn process_runs(pid: u32) -> bool {
    crate::system::process_exists(pid).unwrap_or(true)
}

fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= MIB {
        format!("{} MiB", bytes.div_ceil(MIB))
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PayloadRange, RawEncoding};

    fn range_of(spooled: &Spooled, len: usize) -> PayloadRange {
        PayloadRange {
            path: spooled.segment.clone(),
            offset: spooled.offset,
            len: len as u32,
            encoding: RawEncoding::Utf8,
            gzip: false,
        }
    }

    #[test]
    fn appended_bytes_read_back_through_their_range() {
        let parent = tempfile::tempdir().unwrap();
        let mut spool = LiveSpool::create_in(parent.path(), 1 << 20).unwrap();
        let first = spool.append(b"first body").unwrap();
        let second = spool.append(b"second").unwrap();
        assert_eq!(first.segment, second.segment);
        assert_eq!(second.offset, 10);
        assert_eq!(
            payload_range::read(&range_of(&second, 6)).unwrap(),
            "second"
        );
        assert_eq!(payload_range::read(&range_of(&first, 5)).unwrap(), "first");
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_is_private_and_removed_on_drop() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let mut spool = LiveSpool::create_in(parent.path(), 1 << 20).unwrap();
        let spooled = spool.append(b"secret").unwrap();
        let dir = spool.dir().to_path_buf();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(spool);
        assert!(!dir.exists());
        let gone = payload_range::read(&range_of(&spooled, 6))
            .unwrap_err()
            .to_string();
        assert!(gone.contains("live source has stopped"), "{gone}");
    }

    #[cfg(unix)]
    #[test]
    fn a_spool_left_by_a_process_that_is_gone_is_removed_and_others_are_not() {
        let parent = tempfile::tempdir().unwrap();
        // A child that has exited and been reaped: its pid names no process.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone_pid = child.id();
        child.wait().unwrap();
        let abandoned = parent.path().join(format!("{DIR_PREFIX}{gone_pid}-00"));
        let running = parent
            .path()
            .join(format!("{DIR_PREFIX}{}-00", std::process::id()));
        let unrelated = parent.path().join("notes");
        for dir in [&abandoned, &running, &unrelated] {
            std::fs::create_dir(dir).unwrap();
        }
        let spool = LiveSpool::create_in(parent.path(), 1 << 20).unwrap();
        assert!(!abandoned.exists());
        assert!(running.exists() && unrelated.exists() && spool.dir().exists());
    }

    #[test]
    fn past_the_cap_the_oldest_segment_goes_and_its_payloads_say_so() {
        let parent = tempfile::tempdir().unwrap();
        // 800 bytes kept, segments of 100: each 60-byte body fills most of one.
        let mut spool = LiveSpool::create_in(parent.path(), 800).unwrap();
        let body = |i: u8| vec![b'a' + i; 60];
        let first = spool.append(&body(0)).unwrap();
        let mut last = first.clone();
        for i in 1..20 {
            last = spool.append(&body(i)).unwrap();
        }
        let kept: Vec<_> = spool.segments().map(Path::to_path_buf).collect();
        assert_eq!(kept.len(), 13, "{kept:?}");
        assert!(!first.segment.exists());
        assert_eq!(kept.last(), Some(&*last.segment));
        let gone = payload_range::read(&range_of(&first, 60))
            .unwrap_err()
            .to_string();
        assert_eq!(
            gone,
            "no longer kept: the live spool keeps the newest 1 KiB"
        );
        assert_eq!(
            payload_range::read(&range_of(&last, 60)).unwrap(),
            "t".repeat(60)
        );
    }

    #[test]
    fn a_body_bigger_than_a_segment_gets_one_of_its_own_and_is_kept() {
        let parent = tempfile::tempdir().unwrap();
        let mut spool = LiveSpool::create_in(parent.path(), 80).unwrap();
        let small = spool.append(b"small").unwrap();
        let big = spool.append(&[b'x'; 500]).unwrap();
        assert_ne!(small.segment, big.segment);
        assert_eq!(big.offset, 0);
        assert!(
            !small.segment.exists(),
            "over the cap, the older segment goes"
        );
        assert_eq!(
            payload_range::read(&range_of(&big, 500)).unwrap().len(),
            500
        );
    }
}
