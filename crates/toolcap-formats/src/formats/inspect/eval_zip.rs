//! The `.eval` container: a zip whose members are the log's header (or, while the eval runs,
//! its journal) and one JSON document per sample, read from bytes in memory or in place in the
//! file, member by member; and what a read of a running eval's log remembers for the next.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::super::{Input, MAX_DECOMPRESSED_BYTES};
use super::{EVAL_NAME, EVAL_REASON, GROUPS_AHEAD, Piece, SAMPLES_PER_GROUP, SampleRuns};
use crate::model::{Batch, Origin, Problem, RecordRef};

/// What a zip's bytes are read through: the bytes in memory, or the file itself read at
/// positions ([`FileAt`]). Cloned, it shares what it reads with its clones.
pub(super) trait ZipSource: std::io::Read + std::io::Seek + Clone + Send + Sync {}
impl<T: std::io::Read + std::io::Seek + Clone + Send + Sync> ZipSource for T {}

/// A log's samples made into runs, handed to `sink` a group of samples at a time in the log's
/// order: the header (or the journal's start) first, then every `samples/*.json` member, then
/// the log's coverage. An error from `sink` stops the reading and is returned.
///
/// With `after`, what a read of the same file remembered while its eval ran, and a directory
/// that still holds every member that read took, each where it lay (Inspect appends each
/// flush's samples, and at the finish its header, and writes the directory anew), only the
/// samples added since are read, and the pieces say they add to that read ([`Piece::adds`]).
/// Gives what this read remembers when the eval is still running.
pub(super) fn read_log<R: ZipSource, E>(
    zip: &zip::ZipArchive<R>,
    input: &Input,
    after: Option<&EvalSoFar>,
    mut sink: impl FnMut(Piece) -> Result<(), E>,
) -> Result<Option<EvalSoFar>, E> {
    let mut batch = Batch::default();
    let budget = AtomicU64::new(MAX_DECOMPRESSED_BYTES);
    let names: Vec<String> = zip
        .file_names_raw()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    // The finished header wins over the journal's start, whatever their order. Without
    // header.json the eval is still running (or was killed): its journal says what has
    // been written so far.
    let header_name = ["header.json", "_journal/start.json"]
        .into_iter()
        .find(|wanted| names.iter().any(|name| name == wanted));
    let header =
        header_name.and_then(|name| read(&mut zip.clone(), name, &budget, input, &mut batch));
    let header = header.map(|(header, _)| header);
    let (Some(header), Some(header_name)) = (header, header_name) else {
        batch.problems.push(Problem::error(
            input.origin,
            None,
            "no readable header.json or _journal/start.json",
        ));
        sink(Piece::last(batch))?;
        return Ok(None);
    };
    let in_progress = header_name != "header.json" || header["status"] == "started";
    // The finish too: Inspect writes its header after the samples and leaves them in place.
    let after = after.filter(|so_far| so_far.still_in(zip));
    let adds = after.is_some();
    let taken: std::collections::HashSet<&str> = after
        .iter()
        .flat_map(|so_far| so_far.members.iter().map(|(name, _)| name.as_str()))
        .collect();
    let samples: Vec<&String> = names
        .iter()
        .filter(|name| name.starts_with("samples/") && name.ends_with(".json"))
        .filter(|name| !taken.contains(name.as_str()))
        .collect();
    // Progress is worth saying only for a log read in several groups.
    let total = (samples.len() > SAMPLES_PER_GROUP).then(|| zip.central_directory_start());
    // Samples are read a group at a time on every core, each group through its own clone of
    // the zip (one directory shared by all); each sample's document is made into spans and
    // dropped, and the groups' runs go to `sink` in the log's order as they are made, so the
    // whole log's spans are never held here at once.
    let mut runs = SampleRuns::new(input, EVAL_NAME, &header["eval"]);
    let earlier = after.map_or([0; 3], |so_far| so_far.counts);
    runs.count(earlier);
    let eval = &header["eval"];
    let read_group = |(k, group): (usize, &[&String])| {
        let mut part = Batch::default();
        let mut runs = SampleRuns::new(input, EVAL_NAME, eval);
        runs.before = earlier[0] + k * SAMPLES_PER_GROUP;
        let mut zip = zip.clone();
        // Where the group's members end in the file: how far the reading has come (known
        // for a log read from its file, the only one whose progress is said).
        let mut end = 0;
        for name in group {
            if let Some((sample, lies)) = read(&mut zip, name, &budget, input, &mut part) {
                runs.record = record_of(lies, input);
                if let Some(record) = &runs.record {
                    end = end.max(record.offset + record.len);
                }
                runs.add(&sample, &mut part);
            }
        }
        runs.build(&mut part);
        (part, runs.counts(), end)
    };
    sink(Piece {
        batch,
        progress: total.map(|total| (0, total)),
        more: true,
        adds,
    })?;
    let mut read_so_far = 0;
    let mut take = |(part, counts, end): (Batch, [usize; 3], u64)| {
        runs.count(counts);
        read_so_far = read_so_far.max(end);
        sink(Piece {
            batch: part,
            progress: total.map(|total| (read_so_far.min(total), total)),
            more: true,
            adds,
        })
    };
    let groups = samples.chunks(SAMPLES_PER_GROUP).enumerate();
    if input.may_use_every_core {
        crate::machine::map_in_order(groups, GROUPS_AHEAD, read_group, &mut take)?;
    } else {
        groups.map(read_group).try_for_each(&mut take)?;
    }
    // Every member this read took (those that failed too: their problems are said once),
    // for the next read of a log still being written.
    let so_far = in_progress.then(|| EvalSoFar {
        members: std::iter::once(header_name)
            .chain(after.iter().flat_map(|so_far| so_far.sample_names()))
            .chain(samples.iter().map(|name| name.as_str()))
            .filter_map(|name| Some((name.to_owned(), mark_of(zip, name)?)))
            .collect(),
        counts: runs.counts(),
    });
    let mut last = Batch::default();
    runs.finish(in_progress, &mut last);
    sink(Piece {
        batch: last,
        progress: total.map(|total| (total, total)),
        more: false,
        adds,
    })?;
    Ok(so_far)
}

/// What a read of a log still being written remembers, for the next read of the same file to
/// take only the samples added since (see [`read_log`]).
#[derive(Debug, Clone, Default)]
pub struct EvalSoFar {
    /// The header member read (the journal's start) and every sample member taken, each with
    /// where it lay.
    members: Vec<(String, Mark)>,
    /// Samples taken so far: seen, scored, errored.
    counts: [usize; 3],
}

impl EvalSoFar {
    /// Whether `zip` still holds every member taken, each where it lay and as it was.
    fn still_in<R: ZipSource>(&self, zip: &zip::ZipArchive<R>) -> bool {
        !zip.has_duplicate_names()
            && self
                .members
                .iter()
                .all(|(name, mark)| mark_of(zip, name) == Some(*mark))
    }

    fn sample_names(&self) -> impl Iterator<Item = &str> {
        self.members
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| name.starts_with("samples/"))
    }
}

/// Where a member's local header lies, its compressed size and its checksum, as the zip's
/// directory says them (no reading): the same in a later directory for a member left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    header_start: u64,
    compressed: u64,
    crc: u32,
}

fn mark_of<R: ZipSource>(zip: &zip::ZipArchive<R>, name: &str) -> Option<Mark> {
    let entry = zip
        .by_index_data(zip.index_for_name_raw(name.as_bytes())?)
        .ok()?;
    Some(Mark {
        header_start: entry.header_start(),
        compressed: entry.compressed_size(),
        crc: entry.crc32(),
    })
}

/// An Inspect log's file, read where its members lie instead of whole: the zip's directory
/// first, then each sample's member in turn, so a log of any size costs what its runs cost.
#[cfg(unix)]
pub struct EvalFile {
    zip: zip::ZipArchive<FileAt>,
}

/// What [`EvalFile::open`] found.
#[cfg(unix)]
pub enum OpenedEval {
    /// A zip holding an Inspect log's header or journal.
    Log(EvalFile),
    /// Starts as a zip, but its directory does not read: still being written, or damaged.
    Incomplete(String),
    /// Not a zip, or a zip that is not an Inspect log: read it whole, as any document.
    Other,
}

#[cfg(unix)]
impl EvalFile {
    pub fn open(path: &std::path::Path) -> std::io::Result<OpenedEval> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let mut magic = [0u8; 4];
        if file.read(&mut magic)? < 4 || &magic != b"PK\x03\x04" {
            return Ok(OpenedEval::Other);
        }
        let len = file.metadata()?.len();
        let reader = FileAt {
            file: std::sync::Arc::new(file),
            len,
            position: 0,
        };
        let zip = match zip::ZipArchive::new(reader) {
            Ok(zip) => zip,
            Err(why) => return Ok(OpenedEval::Incomplete(why.to_string())),
        };
        let is_log = zip
            .file_names_raw()
            .any(|name| name == b"header.json" || name == b"_journal/start.json");
        Ok(match is_log {
            true => OpenedEval::Log(EvalFile { zip }),
            false => OpenedEval::Other,
        })
    }

    /// Why the file was read as this format, as detection says it of the same bytes.
    pub fn reason(&self) -> String {
        EVAL_REASON.to_owned()
    }

    /// The log's runs, read as [`InspectEval`](super::InspectEval) reads the same bytes, handed to `sink` a group
    /// of samples at a time; after a read of the same file while its eval ran, only the
    /// samples added since, when the rest is as it was (see [`read_log`]).
    pub fn parse<E>(
        &self,
        input: &Input,
        after: Option<&EvalSoFar>,
        sink: impl FnMut(Piece) -> Result<(), E>,
    ) -> Result<Option<EvalSoFar>, E> {
        read_log(&self.zip, input, after, sink)
    }
}

/// A file read at positions: every clone has its own position and shares the open file, so
/// threads read their members side by side, and the length is the one seen at opening.
#[cfg(unix)]
#[derive(Clone)]
struct FileAt {
    file: std::sync::Arc<std::fs::File>,
    len: u64,
    position: u64,
}

#[cfg(unix)]
impl std::io::Read for FileAt {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let left = self.len.saturating_sub(self.position);
        let wanted = (buf.len() as u64).min(left) as usize;
        let read = self.file.read_at(&mut buf[..wanted], self.position)?;
        self.position += read as u64;
        Ok(read)
    }
}

#[cfg(unix)]
impl std::io::Seek for FileAt {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let position = match to {
            std::io::SeekFrom::Start(at) => Some(at),
            std::io::SeekFrom::End(by) => self.len.checked_add_signed(by),
            std::io::SeekFrom::Current(by) => self.position.checked_add_signed(by),
        };
        let Some(position) = position else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            ));
        };
        self.position = position;
        Ok(position)
    }
}

/// Where a sample's member lies in the log file, for its payloads to stay there: the
/// compressed bytes of one member are a record [`InspectEval::load_payload`] reads again.
/// `None` when the log did not come from a file as it is on disk.
fn record_of(lies: Option<MemberAt>, input: &Input) -> Option<std::sync::Arc<RecordRef>> {
    let Origin::File(path) = input.origin else {
        return None;
    };
    if input.was_gzip || input.base_offset != 0 {
        return None;
    }
    let MemberAt { offset, len } = lies?;
    Some(std::sync::Arc::new(RecordRef {
        path: path.clone(),
        offset,
        len,
        gzip: false,
        format: EVAL_NAME,
    }))
}

/// Where a member's compressed bytes lie in the zip.
#[derive(Clone, Copy)]
struct MemberAt {
    offset: u64,
    len: u64,
}

/// A member read as JSON, and where it lies; or `None` with the reason in `batch`'s problems.
fn read<R: ZipSource>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    budget: &AtomicU64,
    input: &Input,
    batch: &mut Batch,
) -> Option<(Value, Option<MemberAt>)> {
    let document = member(zip, name, budget).and_then(|(bytes, lies)| {
        serde_json::from_slice::<Value>(&bytes)
            .map(|document| (document, lies))
            .map_err(|why| format!("not JSON: {why}"))
    });
    document
        .map_err(|why| {
            batch.problems.push(Problem::error(
                input.origin,
                None,
                format!("member {name}: {why}"),
            ))
        })
        .ok()
}

/// One member decompressed, charged to `budget`, and where its compressed bytes lie.
fn member<R: ZipSource>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    budget: &AtomicU64,
) -> Result<(Vec<u8>, Option<MemberAt>), String> {
    use std::io::Read;
    let mut entry = zip
        .by_name_raw(name.as_bytes())
        .map_err(|why| why.to_string())?;
    let lies = entry.data_start().map(|offset| MemberAt {
        offset,
        len: entry.compressed_size(),
    });
    let method = entry.compression();
    let left = budget.load(Ordering::Relaxed);
    let mut raw = Vec::new();
    (&mut entry)
        .take(left + 1)
        .read_to_end(&mut raw)
        .map_err(|why| why.to_string())?;
    // Compared, not matched: which variants exist depends on the zip crate's features.
    let out = if method == zip::CompressionMethod::Stored {
        raw
    } else if method == zip::CompressionMethod::DEFLATE {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(&raw[..])
            .take(left + 1)
            .read_to_end(&mut out)
            .map_err(|why| why.to_string())?;
        out
    } else if method == zip::CompressionMethod::ZSTD {
        super::super::otlp::container::zstd_decode(&raw, left).map_err(|why| why.to_string())?
    } else {
        return Err(format!("compression method {method} is not read"));
    };
    // Charged whole or not at all, also while other threads charge theirs.
    let charged = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
        left.checked_sub(out.len() as u64)
    });
    if charged.is_err() {
        return Err(format!(
            "over {} MiB decompressed in total",
            MAX_DECOMPRESSED_BYTES >> 20
        ));
    }
    Ok((out, lies))
}

/// A member's bytes as the zip holds them, decompressed: zstd frames by their magic number,
/// a stored JSON document as it is, anything else as deflate.
pub(super) fn unpack_member(raw: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    if raw.starts_with(&super::super::otlp::container::ZSTD_MAGIC) {
        return super::super::otlp::container::zstd_decode(raw, MAX_DECOMPRESSED_BYTES).ok();
    }
    if raw.first() == Some(&b'{') {
        return Some(raw.to_vec());
    }
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(raw)
        .take(MAX_DECOMPRESSED_BYTES + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 <= MAX_DECOMPRESSED_BYTES).then_some(out)
}
