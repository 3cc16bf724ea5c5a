//! Bearer tokens: read from a file, or made up at random for `serve`'s feed and written where
//! only the owner can read it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of the file in the spool directory that holds the feed token `serve` made up.
pub const TOKEN_FILE_NAME: &str = "serve.token";

/// A new random token: 32 bytes from the operating system, hex-encoded.
pub fn generate() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|err| std::io::Error::other(err.to_string()))?;
    Ok(hex::encode(bytes))
}

/// The token in `path`: its first line, without surrounding whitespace.
pub fn read(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        std::io::Error::new(
            err.kind(),
            format!("cannot read the token file {}: {err}", path.display()),
        )
    })?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the token file {} is empty", path.display()),
        ));
    }
    Ok(token)
}

/// Largest token file read back: a generated token and its newline, with room to spare.
const MAX_KEPT_BYTES: u64 = 256;

/// The token an earlier `serve` wrote in `dir`, when it can be taken for one: a regular file
/// (opened without following a symbolic link) owned like `dir`, that nobody else may read or
/// write, holding a token of the generated shape. `Ok(None)`: there is no such file. `Err`:
/// there is one that is not kept, and why.
pub fn kept_in(dir: &Path) -> Result<Option<String>, crate::Error> {
    use std::io::Read;
    let path = dir.join(TOKEN_FILE_NAME);
    let not_kept = |why: &dyn std::fmt::Display| crate::Error::TokenNotKept {
        path: path.clone(),
        why: why.to_string(),
    };
    // A planted FIFO must not block the start.
    let file = match crate::system::read_without_following().open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) if crate::system::is_refused_link(&err) => {
            return Err(not_kept(&"a symbolic link"));
        }
        Err(err) => return Err(not_kept(&err)),
    };
    let metadata = file.metadata().map_err(|err| not_kept(&err))?;
    if !metadata.is_file() {
        return Err(not_kept(&"not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if metadata.mode() & 0o077 != 0 {
            return Err(not_kept(&"others may read or write it"));
        }
        let dir_owner = std::fs::metadata(dir).map_err(|err| not_kept(&err))?.uid();
        if metadata.uid() != dir_owner {
            return Err(not_kept(&"owned by another user"));
        }
    }
    let mut text = String::new();
    file.take(MAX_KEPT_BYTES)
        .read_to_string(&mut text)
        .map_err(|err| not_kept(&err))?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(not_kept(&"not a token serve made up"));
    }
    Ok(Some(token.to_owned()))
}

/// Writes `token` to `dir/serve.token`, readable by the owner only, and returns the path.
pub fn write_in(dir: &Path, token: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(TOKEN_FILE_NAME);
    // A fresh file each time, so an older, looser file's permissions are not inherited.
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let mut file = crate::system::owner_only_file()
        .write(true)
        .create_new(true)
        .open(&path)?;
    writeln!(file, "{token}")?;
    file.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_differ_and_round_trip_through_an_owner_only_file() {
        let first = generate().unwrap();
        let second = generate().unwrap();
        assert_eq!(first.len(), 64);
        assert_ne!(first, second);
        let dir = tempfile::tempdir().unwrap();
        let path = write_in(dir.path(), &first).unwrap();
        assert_eq!(read(&path).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "\n").unwrap();
        assert!(read(&path).is_err(), "an empty token file is an error");
    }

    #[test]
    #[cfg(unix)]
    fn a_token_file_is_kept_only_when_it_is_one_serve_wrote() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert!(
            matches!(kept_in(dir.path()), Ok(None)),
            "no file: nothing kept"
        );
        let token = generate().unwrap();
        let path = write_in(dir.path(), &token).unwrap();
        assert_eq!(kept_in(dir.path()).unwrap(), Some(token.clone()));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let refused = kept_in(dir.path()).unwrap_err().to_string();
        assert!(refused.contains("others may read"), "{refused}");

        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.path().join("planted");
        std::fs::write(&elsewhere, format!("{token}\n")).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let refused = kept_in(dir.path()).unwrap_err().to_string();
        assert!(refused.contains("symbolic link"), "{refused}");

        std::fs::remove_file(&path).unwrap();
        crate::system::make_fifo(&path).unwrap();
        let refused = kept_in(dir.path()).unwrap_err().to_string();
        assert!(refused.contains("not a regular file"), "{refused}");

        std::fs::remove_file(&path).unwrap();
        write_in(dir.path(), "chosen-by-hand").unwrap();
        let refused = kept_in(dir.path()).unwrap_err().to_string();
        assert!(refused.contains("not a token serve made up"), "{refused}");
    }
}
