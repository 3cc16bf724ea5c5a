//! Who can reach a receiver: binding an address other machines can reach without a token
//! would hand the spool (and its live feed) to the network, so it is refused unless the user
//! says `--insecure`, and then warned about. HTTP and gRPC addresses alike.

use std::net::ToSocketAddrs;

/// `Ok(None)`: fine. `Ok(Some(warning))`: allowed by `--insecure`, say it. `Err`: refused.
/// An address that does not resolve passes here; binding it reports the error.
pub fn check_bind(
    flag: &str,
    addr: &str,
    has_token: bool,
    insecure: bool,
) -> Result<Option<String>, crate::Error> {
    let Ok(resolved) = addr.to_socket_addrs() else {
        return Ok(None);
    };
    let exposed: Vec<String> = resolved
        .filter(|a| !a.ip().is_loopback())
        .map(|a| a.ip().to_string())
        .collect();
    if exposed.is_empty() || has_token {
        return Ok(None);
    }
    let hosts = exposed.join(", ");
    if insecure {
        Ok(Some(format!(
            "warning: {flag} {addr} is reachable from other machines ({hosts}) and no token is set (--insecure)"
        )))
    } else {
        Err(crate::Error::Exposed {
            flag: flag.into(),
            addr: addr.into(),
            hosts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_always_fine() {
        for addr in ["127.0.0.1:4318", "[::1]:4317", "127.0.0.1:0"] {
            assert!(
                matches!(check_bind("--http", addr, false, false), Ok(None)),
                "{addr}"
            );
        }
    }

    #[test]
    fn any_address_without_a_token_is_refused_unless_insecure() {
        let refused = check_bind("--grpc", "0.0.0.0:4317", false, false)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--grpc 0.0.0.0:4317"), "{refused}");
        assert!(refused.contains("--insecure"), "{refused}");
        let warned = check_bind("--grpc", "0.0.0.0:4317", false, true).unwrap();
        assert!(warned.unwrap().starts_with("warning: "));
        assert!(matches!(
            check_bind("--http", "[::]:4318", true, false),
            Ok(None)
        ));
    }
}
