//! The body of `POST /improve/score` and its envelope: parsing any bytes never panics, a
//! parsed report's values are finite and its holdout consistent, and a body signed for one
//! namespace never verifies for another or under another root.
#![no_main]

use capsid_core::improve::report::{
    HoldoutManifest, holdout_pass_rate, parse_report, sign_report, verify_envelope,
};
use capsid_core::time::Timestamp;
use libfuzzer_sys::fuzz_target;

const ROOT: &str = "fuzz-root";
const TS: &str = "2026-12-01T03:00:00Z";

fuzz_target!(|data: &[u8]| {
    let Some(now) = Timestamp::parse(TS) else {
        return;
    };
    if let Ok(report) = parse_report("capsid", data) {
        assert!(report.ci_minutes.is_finite() && report.ci_minutes >= 0.0);
        assert!(report.holdout.passed <= report.holdout.total);
        for v in report
            .anchors
            .values()
            .chain(report.secondary.values())
            .flatten()
        {
            assert!(v.is_finite());
        }
        let manifest = HoldoutManifest {
            namespace: "capsid".into(),
            total: report.holdout.total,
            updated_at: TS.into(),
        };
        let rate = holdout_pass_rate(&report, Some(&manifest)).expect("a full run has a rate");
        assert!((0.0..=1.0).contains(&rate));
    }
    let sig = sign_report(ROOT, "capsid", TS, data);
    let fits = data.len() <= capsid_core::improve::report::MAX_BODY_BYTES;
    let ok = verify_envelope(Some(ROOT), Some("capsid"), Some(TS), Some(&sig), data, now);
    assert_eq!(ok.is_ok(), fits);
    assert!(verify_envelope(Some(ROOT), Some("orchard"), Some(TS), Some(&sig), data, now).is_err());
    assert!(
        verify_envelope(
            Some("other"),
            Some("capsid"),
            Some(TS),
            Some(&sig),
            data,
            now
        )
        .is_err()
    );
});
