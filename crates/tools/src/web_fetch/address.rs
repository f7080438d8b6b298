//! Which addresses a fetch may reach: the runtime refuses loopback, private and link-local
//! targets (and so does turnstile, with the same words), unless the user named the host in an
//! allow rule. Every address a host resolves to is checked, and the connection is pinned to
//! the checked addresses so a second lookup cannot answer differently.
//!
//! An IPv6 address that carries an IPv4 one (mapped, compatible, translated, NAT64, 6to4,
//! Teredo) is judged by the IPv4 address inside: a resolver under an attacker's control would
//! otherwise reach `10.0.0.1` as `64:ff9b::a00:1` or `2002:a00:1::`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether `ip` is an address the runtime refuses to fetch from.
pub fn is_blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || a == 0 // "this network" 0.0.0.0/8, the unspecified address among them
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT) 100.64.0.0/10
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18.0.0/15
        || v4.is_multicast() // 224.0.0.0/4
        || a >= 240 // reserved 240.0.0.0/4, the broadcast address among them
}

fn blocked_v6(v6: Ipv6Addr) -> bool {
    if v6.is_loopback() || v6.is_unspecified() {
        return true;
    }
    let s = v6.segments();
    let first = s[0];
    if (first & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated, still private)
        || (first & 0xff00) == 0xff00 // multicast ff00::/8
        || s[..3] == [0x64, 0xff9b, 1]
    // local-use NAT64 64:ff9b:1::/48: translates into the site's own network
    {
        return true;
    }
    embedded_v4(v6).iter().any(|v4| blocked_v4(*v4))
}

/// The IPv4 addresses an IPv6 address stands for, where its form carries one.
fn embedded_v4(v6: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = v6.segments();
    let o = v6.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match s {
        // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d (deprecated).
        [0, 0, 0, 0, 0, 0xffff | 0, _, _] => vec![last],
        // IPv4-translated (SIIT) ::ffff:0:a.b.c.d.
        [0, 0, 0, 0, 0xffff, 0, _, _] => vec![last],
        // NAT64 well-known prefix 64:ff9b::/96.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => vec![last],
        // 6to4 2002:AABB:CCDD::/48: the site's IPv4 address follows the prefix.
        [0x2002, ..] => vec![Ipv4Addr::new(o[2], o[3], o[4], o[5])],
        // Teredo 2001:0::/32: the server's address, then the client's, inverted, at the end.
        [0x2001, 0, ..] => vec![Ipv4Addr::new(o[4], o[5], o[6], o[7]), !last],
        _ => Vec::new(),
    }
}

/// Every spelling a rule may use for `ip`: itself, and for an IPv6 address each IPv4 address
/// its form carries (so `--deny-url 93.184.216.34` also holds for `[::ffff:93.184.216.34]`
/// and the NAT64 `[64:ff9b::5db8:d822]`).
pub fn rule_forms(ip: IpAddr) -> Vec<String> {
    let mut forms = vec![ip.to_string()];
    if let IpAddr::V6(v6) = ip {
        forms.push(format!("[{v6}]"));
        forms.extend(embedded_v4(v6).iter().map(Ipv4Addr::to_string));
    }
    forms
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

    /// Each form an address can take to reach a local target, with the range it belongs to.
    const BLOCKED: &[(&str, &str)] = &[
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("10.1.2.3", "private 10/8"),
        ("172.16.0.1", "private 172.16/12"),
        ("172.31.255.255", "private 172.16/12"),
        ("192.168.1.1", "private 192.168/16"),
        ("169.254.169.254", "link-local (cloud metadata)"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "this network 0/8"),
        ("100.64.0.1", "CGNAT 100.64/10"),
        ("100.127.255.255", "CGNAT 100.64/10"),
        ("198.18.0.1", "benchmarking 198.18/15"),
        ("198.19.255.255", "benchmarking 198.18/15"),
        ("224.0.0.1", "multicast 224/4"),
        ("239.255.255.250", "multicast 224/4"),
        ("240.0.0.1", "reserved 240/4"),
        ("255.255.255.255", "broadcast"),
        ("::1", "IPv6 loopback"),
        ("::", "IPv6 unspecified"),
        ("fc00::1", "unique local"),
        ("fd12:3456::1", "unique local"),
        ("fe80::1", "IPv6 link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "IPv6 multicast"),
        ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
        ("::ffff:10.0.0.1", "IPv4-mapped private"),
        ("::ffff:169.254.169.254", "IPv4-mapped link-local"),
        ("::ffff:0:10.0.0.1", "IPv4-translated private"),
        ("::127.0.0.1", "IPv4-compatible loopback"),
        ("::10.0.0.1", "IPv4-compatible private"),
        ("::192.168.0.1", "IPv4-compatible private"),
        ("64:ff9b::7f00:1", "NAT64 of loopback"),
        ("64:ff9b::10.0.0.1", "NAT64 of private"),
        ("64:ff9b::169.254.169.254", "NAT64 of link-local"),
        ("64:ff9b:1::8.8.8.8", "local-use NAT64 64:ff9b:1::/48"),
        ("64:ff9b:1:abcd::1", "local-use NAT64 64:ff9b:1::/48"),
        ("2002:7f00:1::", "6to4 of loopback"),
        ("2002:a00:1::1", "6to4 of private"),
        ("2002:c0a8:101:1::1", "6to4 of private"),
        ("2002:a9fe:a9fe::", "6to4 of link-local"),
        // Teredo: server 65.54.227.120, client 10.0.0.1 stored inverted (f5ff:fffe).
        (
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            "Teredo, private client",
        ),
        ("2001:0:a00:1:8000:63bf:3fff:fdd2", "Teredo, private server"),
        (
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "Teredo, loopback client",
        ),
    ];

    /// Public addresses, also in the forms that carry IPv4: they stay reachable.
    const OPEN: &[&str] = &[
        "93.184.216.34",
        "8.8.8.8",
        "172.32.0.1",
        "100.63.255.255",
        "100.128.0.1",
        "198.17.255.255",
        "198.20.0.1",
        "223.255.255.255",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::8.8.8.8",
        "2002:808:808::1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001:db8::1",
    ];

    #[test]
    fn every_form_of_a_local_address_is_blocked() {
        for (text, range) in BLOCKED {
            let ip: IpAddr = text.parse().unwrap();
            assert!(is_blocked(ip), "{text} ({range}) must be blocked");
        }
    }

    #[test]
    fn public_addresses_stay_reachable() {
        for text in OPEN {
            assert!(!is_blocked(text.parse().unwrap()), "{text} must stay open");
        }
        assert_eq!(literal("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(literal("example.com"), None);
    }

    #[test]
    fn the_teredo_client_is_read_inverted() {
        let teredo: Ipv6Addr = "2001:0:4136:e378:8000:63bf:f5ff:fffe".parse().unwrap();
        assert_eq!(
            embedded_v4(teredo),
            [Ipv4Addr::new(65, 54, 227, 120), Ipv4Addr::new(10, 0, 0, 1)]
        );
    }
}
