//! Zenoh endpoints checked before Zenoh sees them ([`check_endpoint`]), and Zenoh's error
//! texts made fit to show ([`clean`]): without the source locations Zenoh appends.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The link protocols this build of Zenoh carries (`transport_tcp` only).
pub const PROTOCOLS: &[&str] = &["tcp"];

/// Checks an endpoint as `listen` and `connect` take it: `PROTOCOL/HOST:PORT`, the protocol one
/// this build carries ([`PROTOCOLS`]: `tcp`), the host a name, an IPv4 address or an IPv6
/// address in brackets, the port from 1 to 65535, optionally followed by Zenoh's `?metadata`
/// or `#config`. The error says what is wrong, in a sentence.
///
/// ```
/// use shmcast_zenoh::check_endpoint;
/// assert!(check_endpoint("tcp/127.0.0.1:7447").is_ok());
/// assert!(check_endpoint("tcp/[::1]:7447").is_ok());
/// assert!(check_endpoint("127.0.0.1:7447").is_err());
/// assert!(check_endpoint("tcp/127.0.0.1:99999").is_err());
/// ```
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    const FORM: &str = "PROTOCOL/HOST:PORT, such as tcp/192.0.2.7:7447";
    let Some((protocol, rest)) = endpoint.split_once('/') else {
        return Err(format!("not an endpoint: expected {FORM}"));
    };
    if !PROTOCOLS.contains(&protocol) {
        return Err(if protocol.is_empty() {
            format!("no protocol: expected {FORM}")
        } else {
            format!(
                "protocol {protocol:?} is not supported: this build carries {} only",
                PROTOCOLS.join(", ")
            )
        });
    }
    let address = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, port) = if let Some(bracketed) = address.strip_prefix('[') {
        let (ip, port) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{address:?}: an IPv6 address in brackets lacks its ']'"))?;
        let ip = ip.split_once('%').map_or(ip, |(ip, _zone)| ip);
        if ip.parse::<Ipv6Addr>().is_err() {
            return Err(format!("{ip:?} is not an IPv6 address"));
        }
        let port = port
            .strip_prefix(':')
            .ok_or_else(|| format!("{address:?} has no port: expected {FORM}"))?;
        (None, port)
    } else {
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| format!("{address:?} has no port: expected {FORM}"))?;
        (Some(host), port)
    };
    if let Some(host) = host {
        if host.is_empty() {
            return Err(format!("no host before the port: expected {FORM}"));
        }
        if host.contains(':') {
            return Err(format!(
                "{host:?}: an IPv6 address goes in brackets, such as tcp/[::1]:7447"
            ));
        }
        let name = host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        let numeric = host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        if !name || (numeric && host.parse::<Ipv4Addr>().is_err()) {
            return Err(format!("{host:?} is neither a host name nor an IP address"));
        }
    }
    match port.parse::<u16>() {
        Ok(p) if p >= 1 => Ok(()),
        _ => Err(format!("port {port:?} is not a number from 1 to 65535")),
    }
}

/// Why the host of `endpoint` (checked by [`check_endpoint`]) has no address, when it is a
/// name that does not resolve: Zenoh's own words for it do not say which endpoint failed.
pub(crate) fn unresolvable(endpoint: &str) -> Option<String> {
    use std::net::ToSocketAddrs;
    let (_, rest) = endpoint.split_once('/')?;
    let address = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, _) = address.rsplit_once(':')?;
    if address.starts_with('[') || host.parse::<Ipv4Addr>().is_ok() {
        return None;
    }
    match address.to_socket_addrs().map(|mut found| found.next()) {
        Ok(Some(_)) => None,
        Ok(None) => Some(format!("the name {host:?} has no address")),
        Err(e) => Some(e.to_string()),
    }
}

/// Zenoh's error text without the source locations it appends (` at /path/file.rs:123.`),
/// which mean nothing to an operator.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" at ") {
        let after = &rest[at + 4..];
        let word_end = after.find(char::is_whitespace).unwrap_or(after.len());
        let word = &after[..word_end];
        match source_location(word) {
            Some(len) => {
                out.push_str(&rest[..at]);
                rest = &after[len..];
            }
            None => {
                out.push_str(&rest[..at + 4]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.trim_end().to_owned()
}

/// The length of the source location `word` starts with (`path.rs:123` and an optional `.`),
/// if it starts with one.
fn source_location(word: &str) -> Option<usize> {
    let rs = word.find(".rs:")?;
    let digits = word[rs + 4..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    if digits == 0 || !(word.starts_with('/') || word.contains('/')) {
        return None;
    }
    let mut len = rs + 4 + digits;
    if word[len..].starts_with('.') {
        len += 1;
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked() {
        for good in [
            "tcp/127.0.0.1:7447",
            "tcp/0.0.0.0:1",
            "tcp/localhost:65535",
            "tcp/[::1]:7447",
            "tcp/[fe80::1%eth0]:7447",
            "tcp/host-1.example.org:7447#iface=eth0",
        ] {
            assert_eq!(check_endpoint(good), Ok(()), "{good}");
        }
        for (bad, why) in [
            ("127.0.0.1:7447", "not an endpoint"),
            ("udp/127.0.0.1:7447", "not supported"),
            ("/127.0.0.1:7447", "no protocol"),
            ("tcp/127.0.0.1:99999", "from 1 to 65535"),
            ("tcp/127.0.0.1:0", "from 1 to 65535"),
            ("tcp/127.0.0.1", "no port"),
            ("tcp/:7447", "no host"),
            ("tcp/::1:7447", "brackets"),
            ("tcp/[::1:7447", "lacks"),
            ("tcp/[zz]:7447", "not an IPv6"),
            ("tcp/300.1.1.1:7447", "neither"),
            ("tcp/a b:7447", "neither"),
        ] {
            let e = check_endpoint(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn names_that_do_not_resolve_are_found() {
        assert_eq!(unresolvable("tcp/127.0.0.1:7447"), None);
        assert_eq!(unresolvable("tcp/[::1]:7447"), None);
        assert_eq!(unresolvable("tcp/localhost:7447"), None);
        assert!(unresolvable("tcp/no-such-host.invalid:7447").is_some());
    }

    #[test]
    fn source_locations_are_cut() {
        let z = "Can not create a new TCP listener bound to tcp/127.0.0.1:1: [127.0.0.1:1: \
                 Address already in use (os error 98) at /root/.cargo/registry/src/x/tcp.rs:61.] \
                 at /root/.cargo/registry/src/x/unicast.rs:338.";
        assert_eq!(
            clean(z),
            "Can not create a new TCP listener bound to tcp/127.0.0.1:1: [127.0.0.1:1: \
             Address already in use (os error 98)]"
        );
        assert_eq!(
            clean("invalid port value at src/lib.rs:62."),
            "invalid port value"
        );
        assert_eq!(clean("look at this"), "look at this");
    }
}
