//! Fuzz targets: every parser and the receiver's decoders, each a function over raw bytes that
//! must return (never panic, never hang) whatever the bytes are. The mutation runner
//! (`examples/fuzz.rs`, driven by `scripts/fuzz.sh`) and the regression test
//! (`tests/formats/fuzz_regressions.rs`) share this list, so an input that once broke a target is
//! replayed against exactly the code the fuzzer ran.

use std::path::Path;

use crate::formats::{self, Format, Input};
use crate::model::Origin;
use crate::receiver::decode::{self, BodyType, Compression};
use crate::receiver::{
    self, Delivery, RawBody, ReceivedRequest, RequestSink, SinkError, Transport,
};
use crate::store::Store;

/// Receiver body limit used by the decoder targets: small, so size checks are exercised too.
const FUZZ_BODY_LIMIT: usize = 1 << 20;

/// The code a target runs on one input.
type Run = Box<dyn Fn(&[u8]) + Send + Sync>;

/// A named fuzz target.
pub struct Target {
    pub name: String,
    run: Run,
    /// Seeds are compressed with this before use (the decompressing targets want gzip or zlib).
    pub seed_encoding: SeedEncoding,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedEncoding {
    Plain,
    /// One byte naming the file's extension (see [`split_extension`]), then the file.
    WithExtension,
    Gzip,
    Zlib,
}

impl Target {
    pub fn run(&self, input: &[u8]) {
        (self.run)(input)
    }
}

fn origin() -> Origin {
    Origin::File(std::sync::Arc::new("fuzz-input".into()))
}

/// The first byte picks the extension a file would have had, so extension-driven detection
/// paths are reached too; the rest is the file.
const EXTENSIONS: [Option<&str>; 5] = [None, Some("json"), Some("jsonl"), Some("pb"), Some("log")];

fn split_extension(data: &[u8]) -> (Option<String>, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (
            EXTENSIONS[usize::from(*first) % EXTENSIONS.len()].map(str::to_string),
            rest,
        ),
        None => (None, data),
    }
}

fn format_target(format: &'static dyn Format) -> Target {
    Target {
        name: format!("format-{}", format.name()),
        seed_encoding: SeedEncoding::WithExtension,
        run: Box::new(move |data| {
            let origin = origin();
            let (extension, bytes) = split_extension(data);
            let input = Input::new(&origin, bytes, extension);
            let _ = format.detect(&input);
            // Parsed whether or not detection agreed: a parser must survive any bytes.
            let batch = format.parse(&input);
            let mut store = Store::new();
            store.ingest(batch);
        }),
    }
}

/// Every target, in a stable order.
pub fn targets() -> Vec<Target> {
    let mut targets: Vec<Target> = formats::REGISTRY
        .iter()
        .copied()
        .map(format_target)
        .collect();
    targets.push(Target {
        name: "load-bytes".into(),
        seed_encoding: SeedEncoding::Plain,
        run: Box::new(|data| {
            let loaded = formats::load_bytes(origin(), data);
            let mut store = Store::new();
            store.ingest(loaded.batch);
        }),
    });
    targets.push(Target {
        name: "file-in-place".into(),
        seed_encoding: SeedEncoding::Plain,
        run: Box::new(load_file_in_place),
    });
    targets.push(Target {
        name: "gzip-file".into(),
        seed_encoding: SeedEncoding::Gzip,
        run: Box::new(|data| {
            if let Ok(Some(inflated)) = formats::maybe_gunzip(data) {
                let _ = formats::load_bytes(origin(), &inflated);
            }
        }),
    });
    for (name, body_type) in [
        ("receiver-protobuf", BodyType::Protobuf),
        ("receiver-json", BodyType::Json),
    ] {
        targets.push(Target {
            name: name.into(),
            seed_encoding: SeedEncoding::Plain,
            run: Box::new(move |data| decode_request(data, Compression::Identity, &[body_type])),
        });
    }
    for (name, compression, seed_encoding) in [
        ("receiver-gzip", Compression::Gzip, SeedEncoding::Gzip),
        ("receiver-deflate", Compression::Deflate, SeedEncoding::Zlib),
    ] {
        targets.push(Target {
            name: name.into(),
            seed_encoding,
            run: Box::new(move |data| {
                decode_request(data, compression, &[BodyType::Protobuf, BodyType::Json])
            }),
        });
    }
    targets
}

/// The bytes as a file read in place (an Inspect `.eval` zip read member by member from disk,
/// or an Inspect JSON log read as a stream), every piece taken into a store, then read again
/// after what the first read remembered (a running eval's log followed). The file is this
/// thread's own, written again per input.
fn load_file_in_place(data: &[u8]) {
    let dir = std::env::temp_dir().join(format!("toolcap-fuzz-{}", std::process::id()));
    let path = dir.join(format!("{:?}.eval", std::thread::current().id()));
    if std::fs::create_dir_all(&dir).is_err() || std::fs::write(&path, data).is_err() {
        return;
    }
    let origin = Origin::File(std::sync::Arc::new(path.clone()));
    let mut store = Store::new();
    let mut so_far = None;
    for _ in 0..2 {
        let _ = formats::follow_in_place(formats::REGISTRY, &origin, &path, &mut so_far, |piece| {
            store.ingest(piece.batch);
            Ok::<(), std::convert::Infallible>(())
        });
    }
    let _ = std::fs::remove_file(&path);
}

/// What the receiver does with a body, end to end: decompression, the one decode and id check,
/// then what both sinks do with the decoded request.
fn decode_request(data: &[u8], compression: Compression, body_types: &[BodyType]) {
    let Ok(body) = decode::decompress(
        bytes::Bytes::copy_from_slice(data),
        compression,
        FUZZ_BODY_LIMIT,
    ) else {
        return;
    };
    for body_type in body_types {
        let raw = RawBody {
            bytes: body.clone(),
            body_type: *body_type,
        };
        let transport = match body_type {
            BodyType::Json => Transport::HttpJson,
            BodyType::Protobuf => Transport::HttpProtobuf,
        };
        let _ = receiver::judge_and_take(&BothSinks, raw, transport);
    }
}

/// Does with an accepted request what `--listen` and `serve` do, and checks that each keeps
/// exactly the spans the client is told were accepted, and that its spool line is written.
struct BothSinks;

impl RequestSink for BothSinks {
    fn take(&self, received: ReceivedRequest<'_>) -> Result<Delivery, SinkError> {
        let origin = Origin::endpoint("otlp://fuzz");
        let batch = received.checked.build(&origin, "otlp-fuzz", None);
        assert_eq!(
            batch.spans.len(),
            received.spans(),
            "accepted spans the view does not show: {:?}",
            batch.problems
        );
        let spooled = received.checked.to_owned_request();
        assert_eq!(
            crate::formats::otlp::checked::span_count(&spooled),
            received.spans(),
            "serve would spool other spans"
        );
        assert!(
            received.checked.spool_line().is_ok(),
            "serve could not write the spool line"
        );
        let mut store = Store::new();
        store.ingest(batch);
        Ok(receiver::delivered())
    }
}

pub fn target(name: &str) -> Option<Target> {
    targets().into_iter().find(|target| target.name == name)
}

/// Largest fixture file used as a seed.
const MAX_SEED_BYTES: u64 = 256 * 1024;

/// Every fixture file under `fixtures` (recursively) up to [`MAX_SEED_BYTES`], encoded as the
/// target wants its seeds.
pub fn seeds(fixtures: &Path, encoding: SeedEncoding) -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    collect_files(fixtures, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(&path).ok()?;
            let extension = path
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            Some(encode_seed(&bytes, extension.as_deref(), encoding))
        })
        .collect()
}

fn collect_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            collect_files(&path, files);
        } else if meta.is_file() && meta.len() <= MAX_SEED_BYTES {
            files.push(path);
        }
    }
}

pub fn encode_seed(bytes: &[u8], extension: Option<&str>, encoding: SeedEncoding) -> Vec<u8> {
    use std::io::Write;
    match encoding {
        SeedEncoding::Plain => bytes.to_vec(),
        SeedEncoding::WithExtension => {
            let selector = EXTENSIONS
                .iter()
                .position(|known| *known == extension)
                .unwrap_or(0);
            let mut seed = vec![u8::try_from(selector).unwrap_or(0)];
            seed.extend_from_slice(bytes);
            seed
        }
        SeedEncoding::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = encoder.write_all(bytes);
            encoder.finish().unwrap_or_default()
        }
        SeedEncoding::Zlib => {
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = encoder.write_all(bytes);
            encoder.finish().unwrap_or_default()
        }
    }
}
