use super::*;
use proptest::prelude::*;

fn list(rules: &[&str]) -> Egress {
    Egress::parse("test", rules.iter().copied()).expect("rules parse")
}

#[test]
fn the_registries_are_allowed_on_443_and_nothing_else_is() {
    let egress = Egress::registries();
    for host in REGISTRIES {
        assert_eq!(egress.allowed(host, 443), Ok(()), "{host}");
    }
    assert_eq!(egress.allowed("Static.Crates.IO.", 443), Ok(()));
    let refusal = egress
        .allowed("example.com", 443)
        .expect_err("not a registry");
    assert_eq!(
        refusal.to_string(),
        "refused: example.com:443 is not on the allowlist 'package registries'"
    );
    let refusal = egress.allowed("crates.io", 22).expect_err("not 443");
    assert!(
        refusal.to_string().contains("rule crates.io:443"),
        "{refusal}"
    );
    assert!(egress.allowed("evil.crates.io", 443).is_err());
}

#[test]
fn a_wildcard_admits_names_under_it_only() {
    let egress = list(&["*.example.org"]);
    assert_eq!(egress.allowed("a.example.org", 443), Ok(()));
    assert_eq!(egress.allowed("a.b.example.org", 443), Ok(()));
    for host in [
        "example.org",
        "evilexample.org",
        "example.org.evil.com",
        "a.example.org.evil.com",
        "aexample.org",
        ".example.org",
    ] {
        assert!(egress.allowed(host, 443).is_err(), "{host}");
    }
}

#[test]
fn addresses_and_localhost_need_a_rule_naming_them_exactly() {
    let egress = list(&["*.example.org"]).with(HostRule {
        pattern: HostPattern::Under("0.0.1".into()),
        ports: vec![443],
    });
    let cases = [
        ("127.0.0.1", "IP address"),
        ("127.1", "IP address"),
        ("2130706433", "IP address"),
        ("0x7f.1", "IP address"),
        ("::1", "IP address"),
        ("[::1]", "IP address"),
        ("localhost", "loopback"),
        ("api.localhost", "loopback"),
    ];
    for (host, words) in cases {
        let refusal = egress.allowed(host, 443).expect_err(host);
        assert!(refusal.to_string().contains(words), "{host}: {refusal}");
    }
    let named = list(&["127.0.0.1:8080", "localhost", "[::1]:8443"]);
    assert_eq!(named.allowed("127.0.0.1", 8080), Ok(()));
    assert_eq!(named.allowed("localhost", 443), Ok(()));
    assert_eq!(named.allowed("[::1]", 8443), Ok(()));
    assert!(named.allowed("127.0.0.1", 443).is_err());
}

#[test]
fn malformed_hosts_and_rules_are_refused_by_name() {
    let egress = Egress::registries();
    for host in ["", "a..b", "user@crates.io", "crates.io/x", "é.com", "a b"] {
        assert!(
            matches!(egress.allowed(host, 443), Err(Refusal::Malformed { .. })),
            "{host}"
        );
    }
    for rule in [
        "*.com",
        "*.10.0.0.1",
        "crates.io:0",
        "crates.io:x",
        "*.",
        "[::1",
    ] {
        let err = HostRule::parse(rule).expect_err(rule);
        assert!(err.to_string().contains(rule), "{err}");
    }
    assert_eq!(
        HostRule::parse("*.crates.io:443,8443")
            .expect("parses")
            .to_string(),
        "*.crates.io:443,8443"
    );
}

#[test]
fn only_public_addresses_may_be_tunneled_to() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
    ] {
        assert!(!public_address(ip.parse().expect("an address")), "{ip}");
    }
    for ip in ["151.101.1.137", "2a04:4e42::649"] {
        assert!(public_address(ip.parse().expect("an address")), "{ip}");
    }
}

fn label() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,6}"
}

fn domain() -> impl Strategy<Value = String> {
    prop::collection::vec(label(), 2..4).prop_map(|l| l.join("."))
}

proptest! {
    #[test]
    fn a_wildcard_never_admits_a_name_outside_its_suffix(
        suffix in domain(),
        host in prop::collection::vec(label(), 1..5).prop_map(|l| l.join(".")),
        tail in prop::option::of(domain()),
    ) {
        let egress = list(&[&format!("*.{suffix}")]);
        let candidates = [
            host.clone(),
            format!("{host}{suffix}"),
            format!("{suffix}.{host}"),
            tail.map(|t| format!("{host}.{suffix}.{t}")).unwrap_or_else(|| suffix.clone()),
        ];
        for candidate in candidates {
            let under = candidate.ends_with(&format!(".{suffix}"));
            prop_assert_eq!(egress.allowed(&candidate, 443).is_ok(), under, "{}", candidate);
        }
        let admitted = format!("{host}.{suffix}");
        prop_assert_eq!(egress.allowed(&admitted, 443), Ok(()));
        prop_assert!(egress.allowed(&admitted, 80).is_err());
    }

    #[test]
    fn an_ipv4_address_is_never_admitted_by_a_wildcard_or_the_registries(
        a in any::<u8>(), b in any::<u8>(), c in any::<u8>(), d in any::<u8>(),
        suffix in domain(),
    ) {
        let ip = format!("{a}.{b}.{c}.{d}");
        let egress = list(&[&format!("*.{suffix}")]);
        let refused = matches!(egress.allowed(&ip, 443), Err(Refusal::IpLiteral { .. }));
        prop_assert!(refused, "{}", ip);
        prop_assert!(Egress::registries().allowed(&ip, 443).is_err());
        let short = format!("{a}.{}", u32::from(b) * 65536 + u32::from(c) * 256 + u32::from(d));
        let refused = matches!(egress.allowed(&short, 443), Err(Refusal::IpLiteral { .. }));
        prop_assert!(refused, "{}", short);
    }

    #[test]
    fn allowed_never_panics(host in "\\PC{0,40}", port in any::<u16>()) {
        let _ = Egress::registries().allowed(&host, port);
        let _ = HostRule::parse(&host);
    }
}

#[test]
fn a_rule_parses_into_its_pattern_and_ports_and_displays_back() {
    let exact = |h: &str| HostPattern::Exact(h.into());
    let cases: Vec<(&str, HostPattern, Vec<u16>, &str)> = vec![
        ("crates.io", exact("crates.io"), vec![443], "crates.io:443"),
        (
            "Crates.IO.:80",
            exact("crates.io"),
            vec![80],
            "crates.io:80",
        ),
        (
            "*.crates.io:443,8443",
            HostPattern::Under("crates.io".into()),
            vec![443, 8443],
            "*.crates.io:443,8443",
        ),
        (
            "*.Example.ORG.",
            HostPattern::Under("example.org".into()),
            vec![443],
            "*.example.org:443",
        ),
        (
            "10.0.0.5:8080",
            exact("10.0.0.5"),
            vec![8080],
            "10.0.0.5:8080",
        ),
        (
            "localhost:1,65535",
            exact("localhost"),
            vec![1, 65535],
            "localhost:1,65535",
        ),
        ("[::1]:8443", exact("::1"), vec![8443], "[::1]:8443"),
        ("[::1]", exact("::1"), vec![443], "[::1]:443"),
        ("::1", exact("::1"), vec![443], "[::1]:443"),
        (
            "2001:DB8::1",
            exact("2001:db8::1"),
            vec![443],
            "[2001:db8::1]:443",
        ),
        // A bare IPv6 literal names no port: its last group is part of the address.
        ("::1:8443", exact("::1:8443"), vec![443], "[::1:8443]:443"),
        (
            "[::ffff:10.0.0.1]:22",
            exact("::ffff:10.0.0.1"),
            vec![22],
            "[::ffff:10.0.0.1]:22",
        ),
    ];
    for (text, pattern, ports, shown) in cases {
        let rule = HostRule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(rule.pattern(), &pattern, "{text}");
        assert_eq!(rule.ports(), ports.as_slice(), "{text}");
        assert_eq!(rule.to_string(), shown, "{text}");
        assert_eq!(HostRule::parse(shown), Ok(rule), "{shown} parses back");
    }
}

#[test]
fn a_malformed_rule_is_refused_saying_what_is_wrong() {
    const HOST_PORT: &str = "is not host[:port]";
    const PORT: &str = "has a port that is not 1 to 65535";
    const WILDCARD: &str = "'*.' must stand before a domain of two labels or more";
    const LENGTH: &str = "is not a host name of 1 to 253 characters";
    const LABELS: &str = "is not a host name (letters, digits, '-', '_' in dot-separated labels)";
    const V6: &str = "is not a host name nor an IPv6 address";
    for (rule, why) in [
        ("[::1", HOST_PORT),
        ("[::1]8443", HOST_PORT),
        ("[::1]:", PORT),
        ("crates.io:", PORT),
        ("crates.io:0", PORT),
        ("crates.io:65536", PORT),
        ("crates.io:443,", PORT),
        ("crates.io:x", PORT),
        ("crates.io:-1", PORT),
        ("*.com", WILDCARD),
        ("*.10.0.0.1", WILDCARD),
        ("*.example.0x7f", WILDCARD),
        ("*.", LENGTH),
        ("", LENGTH),
        (":443", LENGTH),
        ("a..b", LABELS),
        ("*.a..b", LABELS),
        ("a.b:c:d", V6),
        ("[1.2.3.4.5:6]", V6),
    ] {
        let err = HostRule::parse(rule).expect_err(rule);
        assert_eq!(
            err,
            RuleError {
                rule: rule.into(),
                why
            },
            "{rule}"
        );
        assert_eq!(err.to_string(), format!("the egress rule {rule:?} {why}"));
    }
}

#[test]
fn a_host_name_is_1_to_253_characters_in_labels_of_at_most_63() {
    let label = |c: &str, n: usize| c.repeat(n);
    // 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253.
    let longest = [
        label("a", 63),
        label("b", 63),
        label("c", 63),
        label("d", 61),
    ]
    .join(".");
    assert_eq!(longest.len(), 253);
    let too_long = format!("e{longest}");
    let egress = list(&[&longest, &format!("{}.x", label("f", 63))]);
    assert_eq!(egress.allowed(&longest, 443), Ok(()));
    assert_eq!(egress.allowed(&format!("{longest}."), 443), Ok(()));
    assert_eq!(
        egress.allowed(&format!("{}.x", label("f", 63)), 443),
        Ok(())
    );
    let malformed = |host: &str, why: &'static str| Refusal::Malformed {
        host: host.into(),
        why,
    };
    const LENGTH: &str = "is not a host name of 1 to 253 characters";
    const LABELS: &str = "is not a host name (letters, digits, '-', '_' in dot-separated labels)";
    let cases = [
        (too_long.clone(), LENGTH),
        (format!("{too_long}."), LENGTH),
        (String::new(), LENGTH),
        (".".into(), LENGTH),
        ("[]".into(), LENGTH),
        (format!("{}.x", label("f", 64)), LABELS),
        ("a..b".into(), LABELS),
        ("a.b..".into(), LABELS),
        ("crates.io/x".into(), LABELS),
        ("a.b:443".into(), "is not a host name nor an IPv6 address"),
    ];
    for (host, why) in cases {
        assert_eq!(
            egress.allowed(&host, 443),
            Err(malformed(&host, why)),
            "{host}"
        );
    }
    assert_eq!(
        malformed("a b", LABELS).to_string(),
        "refused: \"a b\" is not a host name (letters, digits, '-', '_' in dot-separated labels)"
    );
}

#[test]
fn each_refusal_is_worded_naming_the_host_port_and_rule() {
    let egress = list(&["*.example.org:443,8443", "git.example.org:22"]);
    let cases = [
        (
            "A.Example.Org.",
            80,
            Refusal::Port {
                host: "a.example.org".into(),
                port: 80,
                rule: "*.example.org:443,8443".into(),
            },
            "refused: a.example.org:80 is allowed only on the ports of the rule *.example.org:443,8443",
        ),
        (
            "example.com",
            443,
            Refusal::NotListed {
                host: "example.com".into(),
                port: 443,
                list: "test".into(),
            },
            "refused: example.com:443 is not on the allowlist 'test'",
        ),
        (
            "[::1]",
            8443,
            Refusal::IpLiteral {
                host: "::1".into(),
                port: 8443,
            },
            "refused: ::1:8443 is an IP address, and an address is reachable only through a rule naming it exactly",
        ),
        (
            "0x7F.1",
            443,
            Refusal::IpLiteral {
                host: "0x7f.1".into(),
                port: 443,
            },
            "refused: 0x7f.1:443 is an IP address, and an address is reachable only through a rule naming it exactly",
        ),
        (
            "api.localhost",
            443,
            Refusal::Localhost {
                host: "api.localhost".into(),
                port: 443,
            },
            "refused: api.localhost:443 is the box's own loopback name, reachable only through a rule naming it exactly",
        ),
    ];
    for (host, port, refusal, text) in cases {
        assert_eq!(egress.allowed(host, port), Err(refusal.clone()), "{host}");
        assert_eq!(refusal.to_string(), text);
    }
    // Any rule that names the host with the port admits it; the first names the refusal.
    assert_eq!(egress.allowed("git.example.org", 22), Ok(()));
    assert_eq!(egress.allowed("git.example.org", 8443), Ok(()));
    assert_eq!(
        egress.allowed("git.example.org", 80),
        Err(Refusal::Port {
            host: "git.example.org".into(),
            port: 80,
            rule: "*.example.org:443,8443".into(),
        })
    );
}

#[test]
fn an_allowlist_holds_exactly_the_rules_given() {
    assert!(Egress::none("closed").rules().is_empty());
    assert_eq!(
        Egress::none("closed").allowed("crates.io", 443),
        Err(Refusal::NotListed {
            host: "crates.io".into(),
            port: 443,
            list: "closed".into(),
        })
    );
    let shown: Vec<String> = Egress::registries()
        .rules()
        .iter()
        .map(HostRule::to_string)
        .collect();
    let expected: Vec<String> = REGISTRIES.iter().map(|h| format!("{h}:443")).collect();
    assert_eq!(shown, expected);
    let texts = ["crates.io", "*.example.org:80,8080", "[::1]:8443"];
    let rules: Vec<HostRule> = texts
        .iter()
        .map(|t| HostRule::parse(t).expect("parses"))
        .collect();
    let egress = Egress::parse("mine", texts).expect("parses");
    assert_eq!(egress.rules(), rules.as_slice());
    let extra = HostRule::parse("pypi.org").expect("parses");
    let more = egress.with(extra.clone());
    assert_eq!(more.rules().len(), 4);
    assert_eq!(more.rules()[3], extra);
    assert_eq!(more.allowed("pypi.org", 443), Ok(()));
    assert_eq!(
        Egress::parse("mine", ["crates.io", "crates.io:0"]),
        Err(RuleError {
            rule: "crates.io:0".into(),
            why: "has a port that is not 1 to 65535",
        })
    );
}

#[test]
fn every_reserved_address_range_is_refused_at_its_edges_and_its_neighbours_are_public() {
    let reserved = [
        // This network (with the unspecified address).
        "0.0.0.0",
        "0.1.2.3",
        "0.255.255.255",
        // Private.
        "10.0.0.0",
        "10.255.255.255",
        "172.16.0.0",
        "172.31.255.255",
        "192.168.0.0",
        "192.168.255.255",
        // Shared (carrier-grade NAT).
        "100.64.0.0",
        "100.127.255.255",
        // Loopback.
        "127.0.0.1",
        "127.255.255.254",
        // Link-local (the cloud metadata service).
        "169.254.0.0",
        "169.254.169.254",
        "169.254.255.255",
        // Multicast.
        "224.0.0.1",
        "239.255.255.255",
        // Reserved (with the broadcast address).
        "240.0.0.1",
        "255.255.255.254",
        "255.255.255.255",
        // IPv6: unspecified, loopback, multicast, unique-local, link-local.
        "::",
        "::1",
        "ff02::1",
        "ff0e::1",
        "fc00::",
        "fd12:3456::1",
        "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "fe80::1",
        "febf:ffff::1",
        // IPv4 mapped into IPv6.
        "::ffff:0.0.0.0",
        "::ffff:10.0.0.1",
        "::ffff:100.64.0.1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:224.0.0.1",
        "::ffff:255.255.255.255",
    ];
    for ip in reserved {
        assert!(!public_address(ip.parse().expect("an address")), "{ip}");
    }
    let public = [
        "1.0.0.0",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "151.101.1.137",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.3.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.51.101.0",
        "203.0.114.0",
        // Documentation ranges: no host's or network's own services (a sandbox's registries).
        "192.0.2.1",
        "198.51.100.7",
        "203.0.113.80",
        "::ffff:192.0.2.1",
        "223.255.255.255",
        "2a04:4e42::649",
        "fbff:ffff::1",
        "fec0::1",
        "::2",
        "::ffff:151.101.1.137",
    ];
    for ip in public {
        assert!(public_address(ip.parse().expect("an address")), "{ip}");
    }
}

/// The reserved IPv4 ranges, as (first address, prefix length).
const RESERVED_V4: &[([u8; 4], u32)] = &[
    ([0, 0, 0, 0], 8),
    ([10, 0, 0, 0], 8),
    ([100, 64, 0, 0], 10),
    ([127, 0, 0, 0], 8),
    ([169, 254, 0, 0], 16),
    ([172, 16, 0, 0], 12),
    ([192, 168, 0, 0], 16),
    ([224, 0, 0, 0], 4),
    ([240, 0, 0, 0], 4),
];

fn reserved_v4(ip: u32) -> bool {
    RESERVED_V4.iter().any(|(net, len)| {
        let mask = u32::MAX << (32 - len);
        ip & mask == u32::from_be_bytes(*net)
    })
}

proptest! {
    #[test]
    fn an_ipv4_address_is_public_exactly_when_no_reserved_range_holds_it(
        ip in prop_oneof![
            any::<u32>(),
            // Near a range's edges.
            (0..RESERVED_V4.len(), -2i64..=2, any::<bool>()).prop_map(
                |(i, delta, end)| {
                    let (net, len) = RESERVED_V4[i];
                    let first = i64::from(u32::from_be_bytes(net));
                    let size = 1i64 << (32 - len);
                    let at = if end { first + size - 1 } else { first };
                    (at + delta).clamp(0, i64::from(u32::MAX)) as u32
                }
            ),
        ],
    ) {
        let v4 = std::net::Ipv4Addr::from(ip);
        prop_assert_eq!(public_address(IpAddr::V4(v4)), !reserved_v4(ip), "{}", v4);
        prop_assert_eq!(
            public_address(IpAddr::V6(v4.to_ipv6_mapped())),
            !reserved_v4(ip),
            "{}",
            v4.to_ipv6_mapped()
        );
    }

    #[test]
    fn a_rule_displays_as_text_that_parses_back_to_it(
        host in prop_oneof![
            domain(),
            domain().prop_map(|d| format!("*.{d}")),
            any::<std::net::Ipv4Addr>().prop_map(|ip| ip.to_string()),
            any::<std::net::Ipv6Addr>().prop_map(|ip| format!("[{ip}]")),
        ],
        ports in prop::option::of(prop::collection::vec(1..=u16::MAX, 1..4)),
    ) {
        let text = match &ports {
            Some(ports) => format!(
                "{host}:{}",
                ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
            ),
            None => host.clone(),
        };
        let rule = HostRule::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(rule.ports(), ports.as_deref().unwrap_or(&[HTTPS]));
        prop_assert_eq!(HostRule::parse(&rule.to_string()), Ok(rule));
    }
}
