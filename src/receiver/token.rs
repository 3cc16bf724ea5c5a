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

/// Writes `token` to `dir/serve.token`, readable by the owner only, and returns the path.
pub fn write_in(dir: &Path, token: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(TOKEN_FILE_NAME);
    // A fresh file each time, so an older, looser file's permissions are not inherited.
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
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
}
