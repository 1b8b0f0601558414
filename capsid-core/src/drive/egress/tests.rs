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
