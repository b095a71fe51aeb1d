//! Address safety rules: which URLs and IP addresses the fetcher may contact.
//!
//! Reports are untrusted, so a cited URL may point at this machine, the local network
//! or a cloud metadata service. Three checks share the rules below:
//! - [`check_url`] before a request and on every redirect (scheme, literal IP hosts,
//!   `localhost` names);
//! - [`SafeResolver`], the DNS resolver reqwest connects with, which drops forbidden
//!   addresses from every lookup, so a public name resolving to a private address
//!   (DNS rebinding, wildcard DNS) cannot reach it either.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// Why an address is not a public unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16).
    Private,
    /// IPv6 unique-local (fc00::/7) and the deprecated site-local range (fec0::/10).
    UniqueLocal,
    /// 169.254/16 (includes the cloud metadata address 169.254.169.254) and fe80::/10.
    LinkLocal,
    /// 100.64/10, used inside cloud providers (e.g. 100.100.100.200 metadata).
    SharedCgnat,
    Multicast,
    /// 0.0.0.0/8 and ::.
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// 240/4 and other ranges that are never valid destinations.
    Reserved,
}

impl AddressClass {
    pub fn as_str(self) -> &'static str {
        match self {
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::LinkLocal => "link-local",
            AddressClass::SharedCgnat => "shared (carrier-grade NAT)",
            AddressClass::Multicast => "multicast",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Broadcast => "broadcast",
            AddressClass::Reserved => "reserved",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A URL or address the safety rules refuse. The message is what the user sees as
/// the page's reason, so it names the host and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("scheme `{0}` is not allowed (only http and https)")]
    Scheme(String),
    #[error("URL has no host")]
    NoHost,
    #[error("host {host} is a {class} address ({ip})")]
    Address {
        host: String,
        ip: IpAddr,
        class: AddressClass,
    },
    #[error("host {host} resolves only to forbidden addresses ({detail})")]
    Resolved { host: String, detail: String },
    #[error("host {0} names this machine")]
    LocalName(String),
}

/// The class of a forbidden address, or `None` for a public unicast address.
/// IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are
/// judged by the embedded address, so `::ffff:127.0.0.1` is loopback.
pub fn classify_ip(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, _, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some(AddressClass::Unspecified)
    } else if ip.is_loopback() {
        Some(AddressClass::Loopback)
    } else if ip.is_private() {
        Some(AddressClass::Private)
    } else if ip.is_link_local() {
        Some(AddressClass::LinkLocal)
    } else if a == 100 && (64..128).contains(&b) {
        Some(AddressClass::SharedCgnat)
    } else if ip.is_broadcast() {
        Some(AddressClass::Broadcast)
    } else if ip.is_multicast() {
        Some(AddressClass::Multicast)
    } else if a >= 240
        || (a == 192 && b == 0 && matches!(ip.octets()[2], 0 | 2))
        || (a == 198 && (b & 0xfe) == 18)
        || (a == 198 && b == 51 && ip.octets()[2] == 100)
        || (a == 203 && b == 0 && ip.octets()[2] == 113)
    {
        // 240/4 future use, 192.0.0/24 protocol assignments, 198.18/15 benchmarking,
        // 192.0.2/24, 198.51.100/24, 203.0.113/24 documentation: never real servers.
        Some(AddressClass::Reserved)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let first = ip.segments()[0];
    if ip.is_unspecified() {
        Some(AddressClass::Unspecified)
    } else if ip.is_loopback() {
        Some(AddressClass::Loopback)
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        Some(AddressClass::UniqueLocal)
    } else if first & 0xffc0 == 0xfe80 {
        Some(AddressClass::LinkLocal)
    } else if ip.is_multicast() {
        Some(AddressClass::Multicast)
    } else if (first == 0x0100 && ip.segments()[1..4] == [0, 0, 0])
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
    {
        // 100::/64 discard-only, 2001:db8::/32 documentation.
        Some(AddressClass::Reserved)
    } else {
        None
    }
}

/// The IPv4 address carried inside an IPv6 address, for the forms a host would route
/// to that IPv4 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff {
        return Some(tail); // ::ffff:a.b.c.d (mapped)
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(s[6] == 0 && s[7] <= 1) {
        return Some(tail); // ::a.b.c.d (deprecated compatible form)
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return Some(tail); // 64:ff9b::/96 NAT64
    }
    if s[0] == 0x2002 {
        // 6to4: 2002:AABB:CCDD::/48 routes to AA.BB.CC.DD.
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// Whether `ip` may be contacted (`host` only names it in the refusal).
pub fn check_ip(host: &str, ip: IpAddr) -> Result<(), Refusal> {
    match classify_ip(ip) {
        None => Ok(()),
        Some(class) => Err(Refusal::Address {
            host: host.to_string(),
            ip,
            class,
        }),
    }
}

/// Checks that need no DNS: scheme, a host is present, literal IP hosts, and names
/// that always mean this machine. With `allow_private`, only the scheme and host
/// checks apply. `exempt` socket addresses pass even if private.
pub fn check_url(url: &Url, allow_private: bool, exempt: &[SocketAddr]) -> Result<(), Refusal> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(Refusal::Scheme(other.to_string())),
    }
    let host = url.host().ok_or(Refusal::NoHost)?;
    if allow_private {
        return Ok(());
    }
    let port = url.port_or_known_default().unwrap_or(0);
    let ip = match host {
        Host::Ipv4(v4) => IpAddr::V4(v4),
        Host::Ipv6(v6) => IpAddr::V6(v6),
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                return Err(Refusal::LocalName(name));
            }
            return Ok(());
        }
    };
    if exempt.contains(&SocketAddr::new(ip, port)) {
        return Ok(());
    }
    check_ip(&ip.to_string(), ip)
}

/// Keep only the addresses the rules allow; fail when none is left. The error names
/// every dropped address and its class.
pub fn filter_resolved(
    host: &str,
    addrs: impl IntoIterator<Item = SocketAddr>,
) -> Result<Vec<SocketAddr>, Refusal> {
    let mut allowed = Vec::new();
    let mut dropped = Vec::new();
    for addr in addrs {
        match classify_ip(addr.ip()) {
            None => allowed.push(addr),
            Some(class) => dropped.push(format!("{}: {}", addr.ip(), class)),
        }
    }
    if allowed.is_empty() {
        let detail = if dropped.is_empty() {
            "no addresses".to_string()
        } else {
            dropped.join(", ")
        };
        return Err(Refusal::Resolved {
            host: host.to_string(),
            detail,
        });
    }
    Ok(allowed)
}

/// reqwest DNS resolver that applies the rules to every lookup at connect time,
/// including lookups for redirect targets. Literal IP hosts never reach a resolver,
/// which is why [`check_url`] also runs before the request and in the redirect policy.
#[derive(Debug, Clone, Default)]
pub struct SafeResolver;

impl reqwest::dns::Resolve for SafeResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed = filter_resolved(&host, found)?;
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// Find a [`Refusal`] anywhere in an error's source chain (reqwest wraps resolver
/// and redirect-policy errors several layers deep).
pub fn find_refusal(err: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(refusal) = e.downcast_ref::<Refusal>() {
            return Some(refusal.clone());
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classifies_forbidden_ipv4() {
        let cases = [
            ("127.0.0.1", AddressClass::Loopback),
            ("127.255.0.9", AddressClass::Loopback),
            ("10.1.2.3", AddressClass::Private),
            ("172.16.0.1", AddressClass::Private),
            ("172.31.255.255", AddressClass::Private),
            ("192.168.1.1", AddressClass::Private),
            ("169.254.169.254", AddressClass::LinkLocal),
            ("100.100.100.200", AddressClass::SharedCgnat),
            ("224.0.0.1", AddressClass::Multicast),
            ("0.0.0.0", AddressClass::Unspecified),
            ("0.1.2.3", AddressClass::Unspecified),
            ("255.255.255.255", AddressClass::Broadcast),
            ("240.0.0.1", AddressClass::Reserved),
            ("192.0.2.10", AddressClass::Reserved),
            ("198.51.100.1", AddressClass::Reserved),
            ("203.0.113.9", AddressClass::Reserved),
        ];
        for (addr, class) in cases {
            assert_eq!(classify_ip(ip(addr)), Some(class), "{addr}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "93.184.216.34",
            "2606:4700::1111",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(classify_ip(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn classifies_forbidden_ipv6_and_embedded_ipv4() {
        let cases = [
            ("::1", AddressClass::Loopback),
            ("::", AddressClass::Unspecified),
            ("fc00::1", AddressClass::UniqueLocal),
            ("fd12:3456::1", AddressClass::UniqueLocal),
            ("fec0::1", AddressClass::UniqueLocal),
            ("fe80::1", AddressClass::LinkLocal),
            ("ff02::1", AddressClass::Multicast),
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("::ffff:169.254.169.254", AddressClass::LinkLocal),
            ("::10.0.0.1", AddressClass::Private),
            ("64:ff9b::c0a8:0101", AddressClass::Private),
            ("2002:7f00:0001::1", AddressClass::Loopback),
            ("2001:db8::1", AddressClass::Reserved),
        ];
        for (addr, class) in cases {
            assert_eq!(classify_ip(ip(addr)), Some(class), "{addr}");
        }
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn check_url_refuses_schemes_and_literal_private_hosts() {
        assert_eq!(
            check_url(&url("ftp://example.com/a"), false, &[]),
            Err(Refusal::Scheme("ftp".into()))
        );
        assert!(matches!(
            check_url(&url("file:///etc/passwd"), true, &[]),
            Err(Refusal::Scheme(_))
        ));
        for u in [
            "http://127.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]:8080/",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://10.0.0.1/",
            "http://[::ffff:192.168.0.1]/",
        ] {
            assert!(
                matches!(check_url(&url(u), false, &[]), Err(Refusal::Address { .. })),
                "{u}"
            );
        }
        assert!(matches!(
            check_url(&url("http://LOCALHOST./x"), false, &[]),
            Err(Refusal::LocalName(_))
        ));
        assert!(matches!(
            check_url(&url("http://api.localhost/x"), false, &[]),
            Err(Refusal::LocalName(_))
        ));
        assert_eq!(check_url(&url("https://example.com/a"), false, &[]), Ok(()));
        assert_eq!(check_url(&url("http://8.8.8.8/"), false, &[]), Ok(()));
    }

    #[test]
    fn allow_private_and_exemptions() {
        assert_eq!(check_url(&url("http://127.0.0.1:9/"), true, &[]), Ok(()));
        let exempt: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(
            check_url(&url("http://127.0.0.1:4000/a"), false, &[exempt]),
            Ok(())
        );
        // Same host, other port: still refused.
        assert!(check_url(&url("http://127.0.0.1:4001/a"), false, &[exempt]).is_err());
    }

    #[test]
    fn filter_resolved_keeps_public_and_refuses_all_private() {
        let mixed: Vec<SocketAddr> = vec![
            "127.0.0.1:0".parse().unwrap(),
            "93.184.216.34:0".parse().unwrap(),
        ];
        assert_eq!(
            filter_resolved("example.com", mixed).unwrap(),
            vec!["93.184.216.34:0".parse::<SocketAddr>().unwrap()]
        );
        let private: Vec<SocketAddr> = vec![
            "10.0.0.5:0".parse().unwrap(),
            "[fe80::1]:0".parse().unwrap(),
        ];
        let err = filter_resolved("rebind.example", private).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("rebind.example"), "{msg}");
        assert!(msg.contains("10.0.0.5: private"), "{msg}");
        assert!(msg.contains("link-local"), "{msg}");
    }

    #[test]
    fn refusal_is_found_in_error_chains() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] Refusal);
        let err = Outer(Refusal::NoHost);
        assert_eq!(find_refusal(&err), Some(Refusal::NoHost));
        let plain = std::io::Error::other("x");
        assert_eq!(find_refusal(&plain), None);
    }
}
