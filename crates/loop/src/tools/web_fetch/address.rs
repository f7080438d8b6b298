//! Which addresses a fetch may reach: the runtime refuses loopback, private and link-local
//! targets (and so does turnstile, with the same words), unless the user named the host in an
//! allow rule. Every address a host resolves to is checked, and the connection is pinned to
//! the checked addresses so a second lookup cannot answer differently.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Whether `ip` is an address the runtime refuses to fetch from.
pub fn is_blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return blocked_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (first & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated, still private)
        }
    }
}

fn blocked_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space 100.64.0.0/10
}

/// The first blocked address among `addrs`, if any.
pub fn first_blocked(addrs: &[SocketAddr]) -> Option<IpAddr> {
    addrs.iter().map(SocketAddr::ip).find(|ip| is_blocked(*ip))
}

/// `host` as an IP literal (a URL spells IPv6 in brackets).
pub fn literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_addresses_are_blocked() {
        for blocked in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_blocked(blocked.parse().unwrap()), "{blocked}");
        }
        for open in [
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "8.8.8.8",
        ] {
            assert!(!is_blocked(open.parse().unwrap()), "{open}");
        }
        assert_eq!(literal("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(literal("example.com"), None);
    }
}
