//! A policy authorizes only with the signature its signing recorded (SPEC 8). Job bodies and
//! policies share the signing key and the envelope (for compatibility with the Worker), so a
//! valid envelope alone proves only that the server sealed the text, not that the admin
//! signed it as a policy: a job body can be made to look like one. The signature must also be
//! the one `sign_policy` recorded in the newest `policy-signed` audit row for that path, which
//! also refuses an older signed text written back over a newer one.

use crate::crypto::ct_eq;
use crate::jobs::signature::split_signed;

/// The audit action `sign_policy` records (with the signature in its params).
pub const POLICY_SIGNED_ACTION: &str = "policy-signed";

/// Whether the stored policy text `stored` carries the signature recorded by the newest
/// `policy-signed` row of its path (`newest_signed_params`, the row's params JSON text, when
/// there is one). The refusal says why, always as "not signed by the admin".
pub fn signed_by_the_admin(stored: &str, newest_signed_params: Option<&str>) -> Result<(), String> {
    let signature = split_signed(stored)
        .map_err(|e| {
            format!("not signed by the admin: the stored text has no valid signature ({e})")
        })?
        .signature;
    let Some(params) = newest_signed_params else {
        return Err(
            "not signed by the admin: sign_policy never signed this path (no policy-signed audit row), so its signature was not made by a signing"
                .to_owned(),
        );
    };
    let recorded = serde_json::from_str::<serde_json::Value>(params)
        .ok()
        .and_then(|v| {
            v.get("signature")
                .and_then(|s| s.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    if recorded.is_empty() || !ct_eq(signature, &recorded) {
        return Err(
            "not signed by the admin: its signature is not the one sign_policy last recorded for this path (the text was written rather than signed, or an older signed text was written back)"
                .to_owned(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::signature::seal_task;

    #[test]
    fn only_the_newest_recorded_signature_authorizes() {
        let signed = seal_task("k", "- version: 1\n- enabled: true\n");
        let signature = split_signed(&signed).unwrap().signature.to_owned();
        let row = serde_json::json!({"signature": signature, "sha256": "x"}).to_string();
        assert_eq!(signed_by_the_admin(&signed, Some(&row)), Ok(()));
        let other = seal_task("k", "- version: 1\n- enabled: false\n");
        let err = signed_by_the_admin(&other, Some(&row)).unwrap_err();
        assert!(err.starts_with("not signed by the admin"), "{err}");
        let err = signed_by_the_admin(&signed, None).unwrap_err();
        assert!(err.contains("never signed"), "{err}");
        for params in [
            "{}",
            "not json",
            r#"{"signature": 5}"#,
            r#"{"signature": ""}"#,
        ] {
            assert!(
                signed_by_the_admin(&signed, Some(params)).is_err(),
                "{params}"
            );
        }
        assert!(signed_by_the_admin("no envelope", Some(&row)).is_err());
    }
}
