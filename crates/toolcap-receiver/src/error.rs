//! What starting a receiver can fail at: an address that cannot be bound, one that would be
//! open to other machines without a token, or a kept token file that cannot be trusted.

/// An error of the receiver crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot bind {what} address {addr}: {source}")]
    Bind {
        what: &'static str,
        addr: String,
        source: std::io::Error,
    },
    /// `addr` (given as `flag`) reaches other machines (`hosts`, comma-separated) and no token
    /// guards it; `--insecure` would allow it.
    #[error(
        "{flag} {addr} is reachable from other machines ({hosts}) and no token is set: refused. \
         Pass --token (or --token-file), bind 127.0.0.1, or add --insecure"
    )]
    Exposed {
        flag: String,
        addr: String,
        hosts: String,
    },
    /// A token file in the spool directory that is not taken as the kept token, and why.
    #[error("{} ({why})", path.display())]
    TokenNotKept {
        path: std::path::PathBuf,
        why: String,
    },
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn a_failed_bind_names_the_address_and_the_cause() {
        let error = Error::Bind {
            what: "HTTP",
            addr: "127.0.0.1:4318".into(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        assert_eq!(
            error.to_string(),
            "cannot bind HTTP address 127.0.0.1:4318: address in use"
        );
    }
}
