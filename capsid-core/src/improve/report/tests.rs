//! Tests of the score report envelope and body: the reference's refusal order, the test
//! vector computed outside Rust, typing without coercion, and the holdout rules.

use super::*;

const ROOT: &str = "test-root-secret";
const TS: &str = "2026-12-01T03:00:00Z";
/// Computed with Python's `hmac` as the Worker's score job does (key = the hex string).
const VECTOR_KEY: &str = "0e3920ae6306416137b3a0e2b0fdcb3c56a4837fd23c3178b91358ef328184e4";
const VECTOR_SIG: &str = "765c70a5f3840732fe72f7acb476503002e9d854f59d7b2eb38ab0fc89df7f96";
const BODY: &str = r#"{"namespace":"capsid","run_id":"capsid-2026-12-01T03-00-00","attempt_id":"capsid-2026-12-01T03-00-00-a01","head_sha":"0123456789abcdef0123456789abcdef01234567","jti":"j-0001","anchors":{"tests_pass":1},"secondary":{"bundle_kb":412.5,"lint_warnings":null},"holdout":{"total":40,"passed":38},"ci_minutes":6.5}"#;

fn now() -> Timestamp {
    Timestamp::parse(TS).expect("instant")
}

fn envelope(
    root: Option<&str>,
    ns: Option<&str>,
    ts: Option<&str>,
    sig: Option<&str>,
    body: &[u8],
) -> Result<String, ReportRefusal> {
    verify_envelope(root, ns, ts, sig, body, now()).map(str::to_owned)
}

fn with_body(field: &str, value: &str) -> String {
    let mut obj: Map<String, Value> = serde_json::from_str(BODY).expect("body");
    match serde_json::from_str(value) {
        Ok(v) => obj.insert(field.to_owned(), v),
        Err(_) => obj.remove(field),
    };
    Value::Object(obj).to_string()
}

#[test]
fn the_reference_vector_verifies() {
    assert_eq!(namespace_key(ROOT, "capsid"), VECTOR_KEY);
    assert_eq!(sign_report(ROOT, "capsid", TS, BODY.as_bytes()), VECTOR_SIG);
    let upper = VECTOR_SIG.to_ascii_uppercase();
    assert_eq!(
        envelope(
            Some(ROOT),
            Some("capsid"),
            Some(TS),
            Some(&upper),
            BODY.as_bytes()
        )
        .as_deref(),
        Ok("capsid")
    );
    // The key is per namespace: the same body and timestamp do not verify for another one.
    assert_eq!(
        envelope(
            Some(ROOT),
            Some("orchard"),
            Some(TS),
            Some(VECTOR_SIG),
            BODY.as_bytes()
        ),
        Err(ReportRefusal::BadSignature)
    );
}

#[test]
fn refusals_come_in_the_reference_order_with_its_statuses() {
    let body = BODY.as_bytes();
    let ok = Some(VECTOR_SIG);
    let cases: Vec<(Result<String, ReportRefusal>, ReportRefusal, u16)> = vec![
        (
            envelope(None, Some("BAD NS"), Some("x"), None, body),
            ReportRefusal::NotConfigured,
            503,
        ),
        (
            envelope(Some(""), Some("capsid"), Some(TS), ok, body),
            ReportRefusal::NotConfigured,
            503,
        ),
        (
            envelope(Some(ROOT), Some("Capsid"), Some("x"), None, body),
            ReportRefusal::BadNamespace,
            400,
        ),
        (
            envelope(Some(ROOT), None, Some(TS), ok, body),
            ReportRefusal::BadNamespace,
            400,
        ),
        (
            envelope(Some(ROOT), Some("capsid"), Some("yesterday"), None, body),
            ReportRefusal::BadTimestamp,
            400,
        ),
        (
            envelope(Some(ROOT), Some("capsid"), None, ok, body),
            ReportRefusal::BadTimestamp,
            400,
        ),
        (
            envelope(Some(ROOT), Some("capsid"), Some(TS), Some("00"), body),
            ReportRefusal::BadSignature,
            401,
        ),
        (
            envelope(Some(ROOT), Some("capsid"), Some(TS), None, body),
            ReportRefusal::BadSignature,
            401,
        ),
    ];
    for (got, want, status) in cases {
        assert_eq!(got, Err(want.clone()));
        assert_eq!(want.status(), status, "{want}");
    }
    let long = "x".repeat(MAX_BODY_BYTES + 1);
    let sig = sign_report(ROOT, "capsid", TS, long.as_bytes());
    let refused = envelope(
        Some(ROOT),
        Some("capsid"),
        Some(TS),
        Some(&sig),
        long.as_bytes(),
    );
    assert_eq!(refused, Err(ReportRefusal::TooLarge));
    assert_eq!(ReportRefusal::TooLarge.status(), 413);
    assert_eq!(ReportRefusal::Replayed("j".into()).status(), 409);
    assert_eq!(ReportRefusal::ReplayUnknown("db".into()).status(), 503);
}

#[test]
fn the_window_is_thirty_minutes_either_side() {
    for (ts, inside) in [
        ("2026-12-01T02:30:00Z", true),
        ("2026-12-01T03:30:00Z", true),
        ("2026-12-01T02:29:00Z", false),
        ("2026-12-01T03:31:00Z", false),
    ] {
        let sig = sign_report(ROOT, "capsid", ts, BODY.as_bytes());
        let got = envelope(
            Some(ROOT),
            Some("capsid"),
            Some(ts),
            Some(&sig),
            BODY.as_bytes(),
        );
        if inside {
            assert_eq!(got.as_deref(), Ok("capsid"), "{ts}");
        } else {
            assert_eq!(got, Err(ReportRefusal::OutsideWindow), "{ts}");
            assert_eq!(ReportRefusal::OutsideWindow.status(), 401);
        }
    }
}

#[test]
fn a_report_parses_with_nulls_kept() {
    let report = parse_report("capsid", BODY.as_bytes()).expect("parses");
    assert_eq!(report.jti, "j-0001");
    assert_eq!(report.anchors.get("tests_pass"), Some(&Some(1.0)));
    assert_eq!(report.secondary.get("lint_warnings"), Some(&None));
    assert_eq!(report.secondary.get("bundle_kb"), Some(&Some(412.5)));
    assert_eq!(
        report.holdout,
        HoldoutCounts {
            total: 40,
            passed: 38
        }
    );
    assert_eq!(report.ci_minutes, 6.5);
}

#[test]
fn a_body_is_typed_without_coercion() {
    let cases = [
        (
            "anchors",
            r#"{"tests_pass":"1"}"#,
            "anchors.tests_pass must be a number or null",
        ),
        (
            "anchors",
            r#"{"tests_pass":true}"#,
            "anchors.tests_pass must be a number or null",
        ),
        ("anchors", r#"{"Tests":1}"#, "metric name 'Tests'"),
        ("anchors", r#"[1]"#, "anchors must be an object"),
        ("secondary", r#"{"":1}"#, "metric name ''"),
        ("jti", r#""""#, "jti must have 1-256 characters"),
        ("jti", "7", "jti must be a string"),
        ("run_id", "drop", "run_id must be a string"),
        (
            "namespace",
            r#""orchard""#,
            "differs from the x-improve-namespace header",
        ),
        (
            "holdout",
            r#"{"total":3,"passed":4}"#,
            "holdout.passed is greater",
        ),
        (
            "holdout",
            r#"{"total":-1,"passed":0}"#,
            "holdout.total must be a non-negative integer",
        ),
        (
            "holdout",
            r#"{"total":3.5,"passed":0}"#,
            "holdout.total must be a non-negative integer",
        ),
        ("ci_minutes", r#""6""#, "ci_minutes must be a finite number"),
        ("ci_minutes", "-1", "ci_minutes must be a finite number"),
        ("extra", "1", "unknown field 'extra'"),
    ];
    for (field, value, why) in cases {
        let body = with_body(field, value);
        match parse_report("capsid", body.as_bytes()) {
            Err(ReportRefusal::BadBody(msg)) => {
                assert!(msg.contains(why), "{field}={value}: {msg}")
            }
            other => panic!("{field}={value}: {other:?}"),
        }
    }
    let long_jti = format!("\"{}\"", "j".repeat(MAX_FIELD_CHARS + 1));
    assert!(parse_report("capsid", with_body("jti", &long_jti).as_bytes()).is_err());
    let max_jti = format!("\"{}\"", "j".repeat(MAX_FIELD_CHARS));
    assert!(parse_report("capsid", with_body("jti", &max_jti).as_bytes()).is_ok());
    assert!(matches!(
        parse_report("capsid", b"not json"),
        Err(ReportRefusal::BadBody(_))
    ));
    assert!(matches!(
        parse_report("capsid", b"[]"),
        Err(ReportRefusal::BadBody(_))
    ));
}

#[test]
fn metric_maps_are_bounded() {
    let many: Map<String, Value> = (0..=MAX_METRICS)
        .map(|i| (format!("m{i}"), Value::from(i)))
        .collect();
    let body = with_body("secondary", &Value::Object(many).to_string());
    assert!(matches!(
        parse_report("capsid", body.as_bytes()),
        Err(ReportRefusal::BadBody(msg)) if msg.contains("more than 64")
    ));
    let name = "a".repeat(64);
    assert!(metric_name_ok(&name));
    assert!(!metric_name_ok(&format!("{name}a")));
    assert!(namespace_header_ok(&"n".repeat(64)));
    assert!(!namespace_header_ok(&"n".repeat(65)));
    assert!(namespace_header_ok("my-ns_2"));
    assert!(!metric_name_ok("my-metric"));
}

#[test]
fn the_pass_rate_comes_from_the_manifest() {
    let report = parse_report("capsid", BODY.as_bytes()).expect("parses");
    let manifest = |total| HoldoutManifest {
        namespace: "capsid".into(),
        total,
        updated_at: "2026-11-30T00:00:00Z".into(),
    };
    assert_eq!(
        holdout_pass_rate(&report, Some(&manifest(40))),
        Ok(38.0 / 40.0)
    );
    // Fewer cases in the manifest than the report ran: the manifest's total still decides.
    assert_eq!(holdout_pass_rate(&report, Some(&manifest(20))), Ok(1.0));
    assert_eq!(
        holdout_pass_rate(&report, Some(&manifest(41))),
        Err(ReportRefusal::HoldoutShort {
            reported: 40,
            manifest: 41
        })
    );
    assert_eq!(
        holdout_pass_rate(&report, None),
        Err(ReportRefusal::NoManifest("capsid".into()))
    );
    let other = HoldoutManifest {
        namespace: "orchard".into(),
        ..manifest(40)
    };
    assert_eq!(
        holdout_pass_rate(&report, Some(&other)),
        Err(ReportRefusal::NoManifest("capsid".into()))
    );
    assert_eq!(
        manifest_key("capsid"),
        "improve/holdout/capsid/manifest.json"
    );
}
