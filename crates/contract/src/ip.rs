//! Which IP addresses are globally reachable (SPEC §6).
//!
//! IPv4: everything outside the IANA special-purpose registry's non-global
//! entries, multicast, 240/4 and broadcast. IPv6: only `2000::/3` minus the
//! IETF protocol-assignment, documentation, benchmarking and ORCHID blocks.
//! Embedded IPv4 addresses (mapped, compatible, NAT64, 6to4, Teredo) are
//! unwrapped and judged as well, so a private IPv4 cannot hide inside IPv6.

use ipnet::{Ipv4Net, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

/// Why an address is not public; the name of the range it falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonPublic(pub &'static str);

static V4_NON_GLOBAL: LazyLock<Vec<(Ipv4Net, &'static str)>> = LazyLock::new(|| {
    [
        ("0.0.0.0/8", "this network"),
        ("10.0.0.0/8", "private-use"),
        ("100.64.0.0/10", "shared address space"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private-use"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private-use"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("255.255.255.255/32", "limited broadcast"),
    ]
    .into_iter()
    .map(|(net, name)| (net.parse().expect("static IPv4 range"), name))
    .collect()
});

/// Entries inside 192.0.0.0/24 that the registry marks globally reachable.
const V4_GLOBAL_EXCEPTIONS: [Ipv4Addr; 2] = [Ipv4Addr::new(192, 0, 0, 9), Ipv4Addr::new(192, 0, 0, 10)];

static V6_GLOBAL_UNICAST: LazyLock<Ipv6Net> = LazyLock::new(|| "2000::/3".parse().expect("static IPv6 range"));

static V6_NON_GLOBAL: LazyLock<Vec<(Ipv6Net, &'static str)>> = LazyLock::new(|| {
    [
        // Covers Teredo (2001::/32), benchmarking (2001:2::/48), ORCHID and ORCHIDv2.
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
    ]
    .into_iter()
    .map(|(net, name)| (net.parse().expect("static IPv6 range"), name))
    .collect()
});

/// Globally reachable entries inside 2001::/23 (AS112, AMT, and the two anycast hosts).
static V6_GLOBAL_EXCEPTIONS: LazyLock<Vec<Ipv6Net>> = LazyLock::new(|| {
    ["2001:1::1/128", "2001:1::2/128", "2001:3::/32", "2001:4:112::/48"]
        .into_iter()
        .map(|net| net.parse().expect("static IPv6 range"))
        .collect()
});

pub fn check_public(ip: IpAddr) -> Result<(), NonPublic> {
    match ip {
        IpAddr::V4(v4) => check_public_v4(v4),
        IpAddr::V6(v6) => check_public_v6(v6),
    }
}

pub fn check_public_v4(ip: Ipv4Addr) -> Result<(), NonPublic> {
    if V4_GLOBAL_EXCEPTIONS.contains(&ip) {
        return Ok(());
    }
    match V4_NON_GLOBAL.iter().find(|(net, _)| net.contains(&ip)) {
        Some((_, name)) => Err(NonPublic(name)),
        None => Ok(()),
    }
}

pub fn check_public_v6(ip: Ipv6Addr) -> Result<(), NonPublic> {
    if let Some(embedded) = embedded_ipv4(ip) {
        check_public_v4(embedded)?;
    }
    if !V6_GLOBAL_UNICAST.contains(&ip) {
        return Err(NonPublic(v6_outside_global_name(ip)));
    }
    if V6_GLOBAL_EXCEPTIONS.iter().any(|net| net.contains(&ip)) {
        return Ok(());
    }
    match V6_NON_GLOBAL.iter().find(|(net, _)| net.contains(&ip)) {
        Some((_, name)) => Err(NonPublic(name)),
        None => Ok(()),
    }
}

fn v6_outside_global_name(ip: Ipv6Addr) -> &'static str {
    let s = ip.segments();
    if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if s[0] & 0xfe00 == 0xfc00 {
        "unique-local"
    } else if s[0] & 0xffc0 == 0xfe80 {
        "link-local"
    } else if s[0] & 0xff00 == 0xff00 {
        "multicast"
    } else if s[..6] == [0, 0, 0, 0, 0, 0xffff] {
        "IPv4-mapped"
    } else if s[..2] == [0x64, 0xff9b] {
        "NAT64"
    } else {
        "not global unicast"
    }
}

/// The IPv4 address carried inside an IPv6 address, for every embedding that
/// a packet could be routed through.
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let o = ip.octets();
    let s = ip.segments();
    let last32 = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    // IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96 (excluding :: and ::1).
    if s[..5] == [0; 5] && (s[5] == 0xffff || (s[5] == 0 && u32::from(last32) > 1)) {
        return Some(last32);
    }
    // NAT64 well-known prefix 64:ff9b::/96 and local-use 64:ff9b:1::/48.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..3] == [0x64, 0xff9b, 1] {
        return Some(last32);
    }
    // 6to4 2002::/16: the IPv4 address is bits 16..48.
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    // Teredo 2001::/32: the client address is the inverted last 32 bits.
    if s[..2] == [0x2001, 0] {
        return Some(Ipv4Addr::from(!u32::from(last32)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        check_public(s.parse().unwrap()).is_ok()
    }

    #[test]
    fn ipv4_ranges() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "192.0.0.9",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            assert!(public(ip), "{ip} should be public");
        }
        for ip in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "127.0.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!public(ip), "{ip} should not be public");
        }
    }

    #[test]
    fn ipv6_ranges() {
        for ip in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4:112::1",
            "2002:808:808::1",
        ] {
            assert!(public(ip), "{ip} should be public");
        }
        for ip in [
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "3fff::1",
            "100::1",
        ] {
            assert!(!public(ip), "{ip} should not be public");
        }
    }

    #[test]
    fn embedded_addresses_are_unwrapped() {
        let teredo: Ipv6Addr = "2001:0:4136:e378:8000:63bf:3fff:fdd2".parse().unwrap();
        assert_eq!(embedded_ipv4(teredo), Some(Ipv4Addr::new(192, 0, 2, 45)));
        let six_to_four: Ipv6Addr = "2002:c0a8:101::1".parse().unwrap();
        assert_eq!(embedded_ipv4(six_to_four), Some(Ipv4Addr::new(192, 168, 1, 1)));
        assert_eq!(
            check_public("2002:c0a8:101::1".parse().unwrap()),
            Err(NonPublic("private-use"))
        );
        assert_eq!(
            check_public("::ffff:10.0.0.1".parse().unwrap()),
            Err(NonPublic("private-use"))
        );
        assert_eq!(embedded_ipv4("::1".parse().unwrap()), None);
    }
}
