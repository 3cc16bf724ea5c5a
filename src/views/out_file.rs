//! Creating the files the product writes (reports, exports): owner-only (0600), never through a
//! symlink and never into a file that is already there, so a link planted at an expected name
//! cannot redirect a write onto someone else's file.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Most names tried before giving up: `NAME`, `NAME-2`, … for numbered files, and temporary
/// names for a replacement.
const MAX_TRIES: usize = 100;

/// Creates `path` for writing, readable by its owner only. Fails with
/// [`io::ErrorKind::AlreadyExists`] when anything is at `path` already, a symlink (dangling or
/// not) included: `O_EXCL` refuses it and `O_NOFOLLOW` refuses to follow it.
pub fn create_new(path: &Path) -> io::Result<File> {
    crate::system::owner_only_file()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Writes `path` whole through `write`: into a new owner-only file beside it, renamed over
/// `path` once written. A rename replaces whatever is at `path` (a symlink itself, never its
/// target), and a reader of `path` never sees half a file.
pub fn replace<T>(path: &Path, write: impl FnOnce(&mut File) -> io::Result<T>) -> io::Result<T> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let (temp, mut file) = first_free((1..=MAX_TRIES).map(|n| {
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}-{n}.tmp", std::process::id()));
        vec![dir.join(temp_name)]
    }))?
    .pop()
    .expect("one path asked for");
    let written = write(&mut file).and_then(|value| {
        drop(file);
        std::fs::rename(&temp, path).map(|()| value)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Creates a new owner-only file for each of `extensions` in `dir`, all under one name:
/// `STEM.EXT`, else `STEM-2.EXT`, `STEM-3.EXT`, … when any of them is taken. Returns the files
/// with their paths, in the order of `extensions`.
pub fn create_numbered(
    dir: &Path,
    stem: &str,
    extensions: &[&str],
) -> io::Result<Vec<(PathBuf, File)>> {
    first_free((1..=MAX_TRIES).map(|n| {
        let name = match n {
            1 => stem.to_owned(),
            n => format!("{stem}-{n}"),
        };
        extensions
            .iter()
            .map(|ext| dir.join(format!("{name}.{ext}")))
            .collect()
    }))
}

/// The first set of paths that can all be created new; a set with any path taken is let go
/// (the files it did create removed) and the next one tried.
fn first_free(candidates: impl Iterator<Item = Vec<PathBuf>>) -> io::Result<Vec<(PathBuf, File)>> {
    'sets: for paths in candidates {
        let mut created = Vec::with_capacity(paths.len());
        for path in paths {
            match create_new(&path) {
                Ok(file) => created.push((path, file)),
                Err(why) => {
                    for (made, _) in &created {
                        let _ = std::fs::remove_file(made);
                    }
                    if why.kind() == io::ErrorKind::AlreadyExists {
                        continue 'sets;
                    }
                    return Err(io::Error::new(
                        why.kind(),
                        format!("{}: {why}", path.display()),
                    ));
                }
            }
        }
        return Ok(created);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free name after {MAX_TRIES} tries"),
    ))
}

/// A UTC time as export names carry it: `20261206T021500Z`.
pub fn utc_stamp(at: time::OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[cfg(unix)]
    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_stamp_is_readable_utc() {
        let at = time::OffsetDateTime::from_unix_timestamp(1_796_523_300)
            .unwrap()
            .to_offset(time::UtcOffset::from_hms(1, 0, 0).unwrap());
        assert_eq!(at.hour(), 3);
        assert_eq!(utc_stamp(at), "20261206T021500Z");
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("out.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = dir.path().join("dangling.md");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        for path in [&link, &dangling] {
            let refused = create_new(path).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists);
        }
        assert!(!dir.path().join("nowhere").exists());
        // Replacing swaps the link itself for a new owner-only file.
        replace(&link, |file| file.write_all(b"report")).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "report");
        assert_eq!(mode_of(&link), 0o600);
        // Nothing temporary is left beside it.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn numbered_files_skip_any_name_with_a_part_taken() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("r.json")).unwrap();
        std::fs::write(dir.path().join("r-2.md"), "older").unwrap();
        let files = create_numbered(dir.path(), "r", &["md", "json"]).unwrap();
        let paths: Vec<&Path> = files.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(
            paths,
            [dir.path().join("r-3.md"), dir.path().join("r-3.json")]
        );
        for path in paths {
            assert_eq!(mode_of(path), 0o600);
        }
        // The half-free first name was let go whole: no `r.md` is left behind.
        assert!(!dir.path().join("r.md").exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("r-2.md")).unwrap(),
            "older"
        );
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.md");
        std::fs::write(&path, "old").unwrap();
        let failed = replace(&path, |file| {
            file.write_all(b"half")?;
            Err::<(), _>(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
