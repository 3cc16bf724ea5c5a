//! The tailer on its own: which bytes it hands over, at which offset and line.

use std::io::{Seek, SeekFrom, Write};

use toolcap::sources::tail::{LineChunk, Tailer};

fn write(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).expect("write");
}

fn append(path: &std::path::Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open");
    file.write_all(text.as_bytes()).expect("append");
}

fn chunk(offset: u64, line: u64, text: &str) -> LineChunk {
    LineChunk {
        offset,
        line,
        bytes: text.as_bytes().to_vec(),
    }
}

#[test]
fn a_half_written_line_waits_for_its_newline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    write(&path, "{\"t\":\"a\"}\n{\"t\":");
    let mut tailer = Tailer::new(&path);

    let first = tailer.poll(false).expect("poll");
    assert!(!first.reset);
    assert_eq!(first.chunks, vec![chunk(0, 0, "{\"t\":\"a\"}\n")]);
    assert_eq!(first.pending_bytes, 5);

    // Flushing does not take a line that is not whole JSON yet.
    let flushed = tailer.poll(true).expect("poll");
    assert!(flushed.chunks.is_empty());
    assert_eq!(tailer.offset(), 10);

    append(&path, "\"b\"}");
    assert!(tailer.poll(false).expect("poll").chunks.is_empty());
    append(&path, "\n{\"t\":\"c\"}\n");
    let rest = tailer.poll(false).expect("poll");
    assert_eq!(
        rest.chunks,
        vec![chunk(10, 1, "{\"t\":\"b\"}\n{\"t\":\"c\"}\n")]
    );
    assert_eq!(rest.pending_bytes, 0);
    assert_eq!(tailer.lines(), 3);
    assert_eq!(tailer.offset(), 30);

    // Nothing new: nothing handed over twice.
    let idle = tailer.poll(true).expect("poll");
    assert_eq!(
        (idle.reset, idle.chunks, idle.pending_bytes, idle.more),
        (false, vec![], 0, false)
    );
    assert_eq!((idle.consumed, idle.file_len), (30, 30));
}

#[test]
fn a_whole_json_last_line_without_newline_is_flushed_only_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    write(&path, "{\"t\":\"a\"}\n{\"t\":\"b\"}");
    let mut tailer = Tailer::new(&path);
    assert_eq!(
        tailer.poll(false).expect("poll").chunks,
        vec![chunk(0, 0, "{\"t\":\"a\"}\n")]
    );
    assert_eq!(
        tailer.poll(true).expect("poll").chunks,
        vec![chunk(10, 1, "{\"t\":\"b\"}")]
    );
    // The newline that belongs to the flushed line arrives late, then a new line.
    append(&path, "\n{\"t\":\"c\"}\n");
    let next = tailer.poll(false).expect("poll");
    assert!(!next.reset);
    assert_eq!(next.chunks, vec![chunk(20, 2, "{\"t\":\"c\"}\n")]);
    assert_eq!(tailer.lines(), 3);
}

#[test]
fn truncation_resets_to_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    write(&path, "{\"t\":\"a\"}\n{\"t\":\"b\"}\n");
    let mut tailer = Tailer::new(&path);
    assert_eq!(tailer.poll(false).expect("poll").chunks.len(), 1);

    write(&path, "{\"t\":\"x\"}\n");
    let after = tailer.poll(false).expect("poll");
    assert!(after.reset);
    assert_eq!(after.chunks, vec![chunk(0, 0, "{\"t\":\"x\"}\n")]);
}

#[test]
fn rewriting_in_place_with_the_same_length_resets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    write(&path, "{\"t\":\"a\"}\n{\"t\":\"b\"}\n");
    let mut tailer = Tailer::new(&path);
    tailer.poll(false).expect("poll");

    // Same inode, same size, different bytes in the middle of what was consumed.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.seek(SeekFrom::Start(16)).expect("seek");
    file.write_all(b"z").expect("write");
    drop(file);

    let after = tailer.poll(false).expect("poll");
    assert!(after.reset);
    assert_eq!(
        after.chunks,
        vec![chunk(0, 0, "{\"t\":\"a\"}\n{\"t\":\"z\"}\n")]
    );
}

#[test]
fn a_new_file_moved_over_the_path_resets_even_with_identical_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    let text = "{\"t\":\"a\"}\n";
    write(&path, text);
    let mut tailer = Tailer::new(&path);
    tailer.poll(false).expect("poll");

    let other = dir.path().join("other");
    write(&other, &format!("{text}{{\"t\":\"b\"}}\n"));
    std::fs::rename(&other, &path).expect("rename");
    let after = tailer.poll(false).expect("poll");
    assert!(cfg!(not(unix)) || after.reset);
    if after.reset {
        assert_eq!(after.chunks.len(), 1);
        assert_eq!(after.chunks[0].offset, 0);
    }
}

#[test]
fn a_vanished_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    write(&path, "{}\n");
    let mut tailer = Tailer::new(&path);
    tailer.poll(false).expect("poll");
    std::fs::remove_file(&path).expect("remove");
    let error = tailer.poll(false).expect_err("gone");
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn a_big_file_is_handed_over_in_pieces_that_join_up_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jsonl");
    // ~20 MiB of 1 KiB lines: more than two polls' budget.
    let line = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1013));
    assert_eq!(line.len(), 1024);
    let lines = 20 * 1024;
    write(&path, &line.repeat(lines));
    let mut tailer = Tailer::new(&path);
    let (mut polls, mut next_offset, mut next_line) = (0, 0u64, 0u64);
    loop {
        let poll = tailer.poll(false).expect("poll");
        polls += 1;
        assert_eq!(poll.file_len, (lines * 1024) as u64);
        for c in &poll.chunks {
            assert_eq!(
                (c.offset, c.line),
                (next_offset, next_line),
                "a gap or overlap"
            );
            assert!(c.bytes.ends_with(b"\n"));
            next_offset += c.bytes.len() as u64;
            next_line += memchr_count(&c.bytes);
        }
        assert_eq!(poll.consumed, next_offset);
        let handed: usize = poll.chunks.iter().map(|c| c.bytes.len()).sum();
        assert!(
            handed <= (2 << 20) + (2 << 20),
            "{handed} bytes in one poll"
        );
        if !poll.more {
            break;
        }
    }
    assert!(polls >= 3, "{polls} polls");
    assert_eq!(next_line, lines as u64);
    assert_eq!(next_offset, (lines * 1024) as u64);
    assert!(tailer.poll(false).expect("poll").chunks.is_empty());
}

/// The headless loader's smaller pieces: each poll hands over at most one piece (plus the
/// window), a line longer than a piece still comes whole, and the pieces join up exactly.
#[test]
fn a_tailer_with_smaller_pieces_hands_over_smaller_polls_and_whole_long_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pieces.jsonl");
    let short = format!("{{\"pad\":\"{}\"}}\n", "s".repeat(89));
    let long = format!("{{\"pad\":\"{}\"}}\n", "l".repeat(9_000));
    let mut content = short.repeat(40);
    content.push_str(&long);
    content.push_str(&short.repeat(40));
    write(&path, &content);
    let piece = 1_000u64;
    let mut tailer = Tailer::with_piece_bytes(&path, piece);
    let (mut read, mut polls, mut biggest) = (Vec::new(), 0, 0usize);
    loop {
        let poll = tailer.poll(false).expect("poll");
        polls += 1;
        let handed: usize = poll.chunks.iter().map(|c| c.bytes.len()).sum();
        for chunk in poll.chunks {
            assert_eq!(chunk.offset, read.len() as u64, "a gap or overlap");
            assert!(chunk.bytes.ends_with(b"\n"));
            biggest = biggest.max(chunk.bytes.len());
            read.extend_from_slice(&chunk.bytes);
        }
        // Short lines come a piece at a time; the poll that reads on through the long line
        // hands over at most twice that line.
        match read.len() < 40 * short.len() {
            true => assert_eq!(handed, piece as usize),
            false => assert!(handed <= 2 * long.len(), "{handed} bytes in one poll"),
        }
        if !poll.more {
            break;
        }
    }
    assert!(
        read == content.as_bytes(),
        "the pieces differ from the file"
    );
    assert!(biggest >= long.len(), "the long line was cut: {biggest}");
    assert!(polls >= 5, "{polls} polls for {} bytes", content.len());
}

fn memchr_count(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// A loader hands back each piece's buffer once parsed: later windows are read into it, and the
/// pieces join up exactly as with fresh buffers.
#[test]
fn recycled_buffers_are_read_into_again_and_pieces_still_join_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jsonl");
    let line = format!("{{\"pad\":\"{}\"}}\n", "y".repeat(1013));
    let lines = 12 * 1024;
    let content = line.repeat(lines);
    write(&path, &content);
    let mut tailer = Tailer::with_piece_bytes(&path, 2 << 20);
    // A capacity no fresh window has: the piece read into it shows it.
    let marked = (3 << 20) + 123;
    tailer.recycle(Vec::with_capacity(marked));
    let mut read = Vec::new();
    let mut capacities = Vec::new();
    loop {
        let poll = tailer.poll(false).expect("poll");
        for chunk in poll.chunks {
            assert_eq!(chunk.offset, read.len() as u64, "a gap or overlap");
            read.extend_from_slice(&chunk.bytes);
            capacities.push(chunk.bytes.capacity());
            tailer.recycle(chunk.bytes);
        }
        if !poll.more {
            break;
        }
    }
    assert!(
        read == content.as_bytes(),
        "the pieces differ from the file"
    );
    assert_eq!(
        capacities[0], marked,
        "the first window was not read into the spare buffer"
    );
    assert!(capacities.len() > 3, "{} pieces", capacities.len());
    let marked_reads = capacities.iter().filter(|&&c| c == marked).count();
    assert!(
        marked_reads >= 2,
        "the spare buffer was not read into again: {capacities:?}"
    );
}

/// A line longer than a piece is read on into the same buffer a step at a time: its buffer ends
/// about as big as the line (at most an eighth bigger), where doubling the window held up to
/// twice the line; and the lines after it still join up.
#[test]
fn a_line_longer_than_a_piece_is_held_in_a_buffer_about_its_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("long.jsonl");
    let piece = 512u64 << 10;
    // 1.2 MB: a doubled window would be 2 MiB.
    let long = format!("{{\"pad\":\"{}\"}}\n", "l".repeat(1_200_000));
    let short = "{\"a\":1}\n";
    let content = format!("{long}{short}{long}{short}");
    write(&path, &content);
    let mut tailer = Tailer::with_piece_bytes(&path, piece);
    let mut read = Vec::new();
    loop {
        let poll = tailer.poll(false).expect("poll");
        for chunk in poll.chunks {
            assert_eq!(chunk.offset, read.len() as u64, "a gap or overlap");
            if chunk.bytes.len() >= long.len() {
                assert!(
                    chunk.bytes.capacity() <= long.len() * 9 / 8,
                    "a {}-byte line held in {} bytes",
                    long.len(),
                    chunk.bytes.capacity()
                );
            }
            read.extend_from_slice(&chunk.bytes);
        }
        if !poll.more {
            break;
        }
    }
    assert!(
        read == content.as_bytes(),
        "the pieces differ from the file"
    );
}

/// A line past the line limit is reported by number and skipped; the lines around it are
/// handed over whole.
#[test]
fn a_line_past_the_limit_is_reported_and_the_next_lines_still_come() {
    use toolcap::sources::tail::MAX_LINE_BYTES;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("oversize.jsonl");
    let first = "{\"first\":1}\n";
    let after = "{\"after\":2}\n";
    let mut content = Vec::with_capacity(MAX_LINE_BYTES as usize + 64);
    content.extend_from_slice(first.as_bytes());
    content.resize(first.len() + MAX_LINE_BYTES as usize + 10, b'x');
    content.push(b'\n');
    content.extend_from_slice(after.as_bytes());
    std::fs::write(&path, &content).expect("write");
    let mut tailer = Tailer::new(&path);
    let (mut lines, mut oversize) = (Vec::new(), Vec::new());
    loop {
        let poll = tailer.poll(false).expect("poll");
        oversize.extend(poll.long_lines.iter().map(|long| (long.line, long.bytes)));
        lines.extend(poll.chunks.into_iter().map(|c| (c.line, c.bytes)));
        if !poll.more {
            break;
        }
    }
    assert_eq!(
        oversize,
        vec![(2, MAX_LINE_BYTES + 10)],
        "the long line is line 2, told once with its length"
    );
    assert_eq!(
        lines,
        vec![
            (0, first.as_bytes().to_vec()),
            (2, after.as_bytes().to_vec())
        ]
    );
}
