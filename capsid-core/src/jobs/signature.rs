//! The signed task envelope (reference 6.3): how a job body is sealed at post and checked
//! at claim and resume, so a row edited after `post` never reaches a driver.
//!
//! Stored form: `"---\ncapsid-task-signature: <hex>\n---\n" + body`, where
//! `hex = HMAC_SHA256_hex(key = derive_task_key(secret), msg = body)`. The same envelope
//! signs the nightly task documents and the policy documents.
//!
//! Parsing is stricter than the Worker: the frontmatter must be exactly the one line the
//! signer writes (the successor already refuses extra lines; we also refuse surrounding
//! whitespace), so the only edit of a sealed text that still verifies is a case change of
//! a hex letter in the signature, which the reference's lower-casing compare allows.

use crate::crypto::{ct_eq, hmac_sha256_hex};

/// The key-derivation context; distinct from every other HMAC context by construction.
pub const TASK_KEY_CONTEXT: &str = "capsid-improve-task:v1";

/// The frontmatter field carrying the signature.
pub const TASK_SIGNATURE_FIELD: &str = "capsid-task-signature";

const FENCE: &str = "---\n";
const CLOSING_FENCE: &str = "\n---\n";

/// Why a stored text is not a well-formed signed envelope.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The text does not open with a `---` frontmatter block.
    #[error("it has no frontmatter block; every body the server signs opens with one")]
    NoFrontmatter,
    /// The frontmatter carries no `capsid-task-signature:` line.
    #[error("its frontmatter has no capsid-task-signature line, so nothing signed it")]
    NoSignatureLine,
    /// The signature line is not `capsid-task-signature: <hex>`.
    #[error("its capsid-task-signature line is not of the form `capsid-task-signature: <hex>`")]
    MalformedSignatureLine,
    /// The frontmatter holds lines besides the signature; the signature does not cover them.
    #[error(
        "its frontmatter holds {count} line(s) besides the capsid-task-signature line; the signature does not cover the frontmatter, so they were added after signing"
    )]
    ExtraFrontmatterLines {
        /// How many extra lines.
        count: usize,
    },
}

/// Why a stored body failed verification.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No signing secret is configured, so nothing can be verified.
    #[error("signing is not configured (no signing secret), so no job body can be verified")]
    NotConfigured,
    /// The envelope is malformed.
    #[error("this job body is not a signed envelope: {0}")]
    Envelope(#[from] EnvelopeError),
    /// The signature does not match the body.
    #[error(
        "this job body's capsid-task-signature does not match its body; it was edited after it was signed"
    )]
    Mismatch,
}

/// A stored envelope split into its signature and the body the signature covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedParts<'a> {
    /// The signature as written (hex; compared lower-cased).
    pub signature: &'a str,
    /// The signed body, byte for byte.
    pub body: &'a str,
}

/// The per-purpose key: `HMAC_SHA256_hex(key = secret, msg = "capsid-improve-task:v1")`.
pub fn derive_task_key(secret: &str) -> String {
    hmac_sha256_hex(secret, TASK_KEY_CONTEXT)
}

/// The signature of `body`: HMAC keyed by the derived key's hex string (its bytes).
pub fn sign_task(secret: &str, body: &str) -> String {
    hmac_sha256_hex(derive_task_key(secret), body)
}

/// Wraps `body` in the signature frontmatter. A body that already carries a clean
/// signature envelope is unwrapped first, so envelopes never nest.
pub fn seal_task(secret: &str, body: &str) -> String {
    let mut inner = body;
    while let Ok(parts) = split_signed(inner) {
        inner = parts.body;
    }
    format!(
        "{FENCE}{TASK_SIGNATURE_FIELD}: {}{CLOSING_FENCE}{inner}",
        sign_task(secret, inner)
    )
}

/// Splits a stored envelope, refusing anything but exactly one canonical signature line.
pub fn split_signed(stored: &str) -> Result<SignedParts<'_>, EnvelopeError> {
    let rest = stored
        .strip_prefix(FENCE)
        .ok_or(EnvelopeError::NoFrontmatter)?;
    // The Worker's lazy `^---\n([\s\S]*?)\n---\n`: the first closing fence ends the block.
    let end = rest
        .find(CLOSING_FENCE)
        .ok_or(EnvelopeError::NoFrontmatter)?;
    let frontmatter = &rest[..end];
    let body = &rest[end + CLOSING_FENCE.len()..];
    let lines: Vec<&str> = frontmatter.split('\n').collect();
    let field = format!("{TASK_SIGNATURE_FIELD}:");
    let Some(line) = lines.iter().find(|l| l.starts_with(&field)) else {
        return Err(EnvelopeError::NoSignatureLine);
    };
    if lines.len() > 1 {
        return Err(EnvelopeError::ExtraFrontmatterLines {
            count: lines.len() - 1,
        });
    }
    let signature = line[field.len()..]
        .strip_prefix(' ')
        .filter(|s| !s.is_empty())
        .ok_or(EnvelopeError::MalformedSignatureLine)?;
    Ok(SignedParts { signature, body })
}

/// Verifies a stored envelope under `secret` and returns the signed body.
pub fn verify_task<'a>(secret: &str, stored: &'a str) -> Result<&'a str, SignatureError> {
    if secret.is_empty() {
        return Err(SignatureError::NotConfigured);
    }
    let parts = split_signed(stored)?;
    let expected = sign_task(secret, parts.body);
    if ct_eq(parts.signature.to_ascii_lowercase(), expected) {
        Ok(parts.body)
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The key-derivation context of a job whose terms are signed with its body (a job with a
/// role): distinct from [`TASK_KEY_CONTEXT`], so a terms signature never verifies as a bare
/// body's, and removing the terms from a row cannot turn it into a job without them.
pub const JOB_TERMS_KEY_CONTEXT: &str = "capsid-job-terms:v1";

/// What a job's signature covers besides its body: the terms a driver acts on. A job with no
/// terms is signed exactly as the Worker signs a task (its body alone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobTerms<'a> {
    /// The job's role.
    pub role: Option<&'a str>,
    /// Where the job works (its leased paths).
    pub paths: Option<&'a [String]>,
}

impl JobTerms<'_> {
    fn is_empty(&self) -> bool {
        self.role.is_none() && self.paths.is_none()
    }

    /// The message a terms signature covers: the body and the terms as one JSON object, so no
    /// body can be read as another body with other terms. A job without paths signs the
    /// object without the key (as jobs signed before paths existed).
    fn message(&self, body: &str) -> String {
        let mut message = serde_json::json!({ "body": body, "role": self.role });
        if let Some(paths) = self.paths {
            message["paths"] = serde_json::json!(paths);
        }
        message.to_string()
    }
}

fn sign_job(secret: &str, body: &str, terms: &JobTerms<'_>) -> String {
    if terms.is_empty() {
        return sign_task(secret, body);
    }
    hmac_sha256_hex(
        hmac_sha256_hex(secret, JOB_TERMS_KEY_CONTEXT),
        terms.message(body),
    )
}

/// Seals a job's body and its terms: the stored form is the task envelope of
/// [`seal_task`], whose signature covers the terms too when there are any.
pub fn seal_job(secret: &str, body: &str, terms: &JobTerms<'_>) -> String {
    let mut inner = body;
    while let Ok(parts) = split_signed(inner) {
        inner = parts.body;
    }
    format!(
        "{FENCE}{TASK_SIGNATURE_FIELD}: {}{CLOSING_FENCE}{inner}",
        sign_job(secret, inner, terms)
    )
}

/// Verifies a stored job body under `secret` with the terms its row holds, and returns the
/// signed body: a row whose role was edited after post fails as an edited body does.
pub fn verify_job<'a>(
    secret: &str,
    stored: &'a str,
    terms: &JobTerms<'_>,
) -> Result<&'a str, SignatureError> {
    if secret.is_empty() {
        return Err(SignatureError::NotConfigured);
    }
    let parts = split_signed(stored)?;
    let expected = sign_job(secret, parts.body, terms);
    if ct_eq(parts.signature.to_ascii_lowercase(), expected) {
        Ok(parts.body)
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECRET: &str = "capsid-test-secret";
    const BODY: &str = "Fix the flaky test in ci.yml\n\nRun cargo test and open a PR.\n";
    const SIGNATURE: &str = "c923bb1369cd3e10fdd6808d1c08fe7c0ef32ca290041c777e521ec7b6c912ab";

    #[test]
    fn known_vector() {
        assert_eq!(
            derive_task_key(SECRET),
            "69602974fffccf4993c321597e96283166c8745b1ae2647183545b752c73c71d"
        );
        assert_eq!(sign_task(SECRET, BODY), SIGNATURE);
        let sealed = seal_task(SECRET, BODY);
        assert_eq!(
            sealed,
            format!("---\ncapsid-task-signature: {SIGNATURE}\n---\n{BODY}")
        );
        assert_eq!(verify_task(SECRET, &sealed), Ok(BODY));
    }

    #[test]
    fn a_jobs_terms_are_inside_its_signature() {
        let none = JobTerms::default();
        // No terms: exactly the Worker's task envelope.
        assert_eq!(seal_job(SECRET, BODY, &none), seal_task(SECRET, BODY));
        assert_eq!(
            verify_job(SECRET, &seal_task(SECRET, BODY), &none),
            Ok(BODY)
        );
        let scout = JobTerms {
            role: Some("scout"),
            paths: None,
        };
        let sealed = seal_job(SECRET, BODY, &scout);
        assert_eq!(verify_job(SECRET, &sealed, &scout), Ok(BODY));
        // A role edited, added or removed after post does not verify.
        let junior = JobTerms {
            role: Some("junior"),
            paths: None,
        };
        assert_eq!(
            verify_job(SECRET, &sealed, &junior),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_job(SECRET, &sealed, &none),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_job(SECRET, &seal_task(SECRET, BODY), &scout),
            Err(SignatureError::Mismatch)
        );
        // A body written as the terms' own message is no way around them.
        let forged = seal_task(SECRET, &scout.message(BODY));
        assert_eq!(
            verify_job(SECRET, &forged, &scout),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_job("", &sealed, &scout),
            Err(SignatureError::NotConfigured)
        );
        assert_eq!(
            verify_job("other", &sealed, &scout),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn a_jobs_paths_are_inside_its_signature() {
        let api = ["src/api/**".to_owned()];
        let web = ["src/web/**".to_owned()];
        let leased = JobTerms {
            role: None,
            paths: Some(&api),
        };
        let sealed = seal_job(SECRET, BODY, &leased);
        assert_eq!(verify_job(SECRET, &sealed, &leased), Ok(BODY));
        assert_ne!(sealed, seal_task(SECRET, BODY), "paths are signed terms");
        for edited in [
            JobTerms::default(),
            JobTerms {
                role: None,
                paths: Some(&web),
            },
            JobTerms {
                role: None,
                paths: Some(&[]),
            },
        ] {
            assert_eq!(
                verify_job(SECRET, &sealed, &edited),
                Err(SignatureError::Mismatch),
                "{edited:?}"
            );
        }
        // A job with a role and no paths signs as it did before paths existed.
        let scout = JobTerms {
            role: Some("scout"),
            paths: None,
        };
        assert_eq!(
            scout.message(BODY),
            serde_json::json!({"body": BODY, "role": "scout"}).to_string()
        );
    }

    #[test]
    fn an_upper_case_signature_verifies() {
        let stored = format!(
            "---\ncapsid-task-signature: {}\n---\n{BODY}",
            SIGNATURE.to_uppercase()
        );
        assert_eq!(verify_task(SECRET, &stored), Ok(BODY));
    }

    #[test]
    fn envelope_refusals() {
        let sig = format!("capsid-task-signature: {SIGNATURE}");
        let cases: &[(String, EnvelopeError)] = &[
            (BODY.to_owned(), EnvelopeError::NoFrontmatter),
            (format!("---\n{sig}\n{BODY}"), EnvelopeError::NoFrontmatter),
            (
                format!("\n---\n{sig}\n---\n{BODY}"),
                EnvelopeError::NoFrontmatter,
            ),
            (
                format!("---\nsignature: {SIGNATURE}\n---\n{BODY}"),
                EnvelopeError::NoSignatureLine,
            ),
            (
                format!("---\n  {sig}\n---\n{BODY}"),
                EnvelopeError::NoSignatureLine,
            ),
            (
                format!("---\n{sig}\nauthor: x\n---\n{BODY}"),
                EnvelopeError::ExtraFrontmatterLines { count: 1 },
            ),
            (
                format!("---\n\n{sig}\n---\n{BODY}"),
                EnvelopeError::ExtraFrontmatterLines { count: 1 },
            ),
            (
                format!("---\n{sig}\n{sig}\n---\n{BODY}"),
                EnvelopeError::ExtraFrontmatterLines { count: 1 },
            ),
            (
                format!("---\ncapsid-task-signature:{SIGNATURE}\n---\n{BODY}"),
                EnvelopeError::MalformedSignatureLine,
            ),
            (
                "---\ncapsid-task-signature: \n---\nx".to_owned(),
                EnvelopeError::MalformedSignatureLine,
            ),
        ];
        for (stored, want) in cases {
            assert_eq!(split_signed(stored), Err(want.clone()), "{stored:?}");
            assert_eq!(
                verify_task(SECRET, stored),
                Err(SignatureError::Envelope(want.clone()))
            );
        }
    }

    #[test]
    fn trailing_whitespace_in_the_signature_line_is_a_mismatch() {
        let stored = format!("---\ncapsid-task-signature: {SIGNATURE} \n---\n{BODY}");
        assert_eq!(verify_task(SECRET, &stored), Err(SignatureError::Mismatch));
    }

    #[test]
    fn no_secret_verifies_nothing() {
        let sealed = seal_task("", BODY);
        assert_eq!(verify_task("", &sealed), Err(SignatureError::NotConfigured));
    }

    #[test]
    fn sealing_a_sealed_body_does_not_nest() {
        let once = seal_task(SECRET, BODY);
        let twice = seal_task(SECRET, &once);
        assert_eq!(twice, once);
        assert_eq!(seal_task("other", &once), seal_task("other", BODY));
        // A body whose first fence holds other lines is not an envelope and is kept whole.
        let other = "---\ntitle: x\n---\nhello";
        assert_eq!(verify_task(SECRET, &seal_task(SECRET, other)), Ok(other));
    }

    #[test]
    fn the_body_may_hold_its_own_fences() {
        let body = "---\n\nnot frontmatter\n---\n";
        let sealed = seal_task(SECRET, body);
        assert_eq!(verify_task(SECRET, &sealed), Ok(body));
    }

    /// One edit of the stored text: replace, insert or delete a char at a char index.
    #[derive(Clone, Debug)]
    enum Edit {
        Replace(usize, char),
        Insert(usize, char),
        Delete(usize),
    }

    fn apply(text: &str, edit: &Edit) -> String {
        let mut chars: Vec<char> = text.chars().collect();
        match *edit {
            Edit::Replace(i, c) => {
                let i = i % chars.len();
                chars[i] = c;
            }
            Edit::Insert(i, c) => {
                let i = i % (chars.len() + 1);
                chars.insert(i, c);
            }
            Edit::Delete(i) => {
                let i = i % chars.len();
                chars.remove(i);
            }
        }
        chars.into_iter().collect()
    }

    fn any_edit() -> impl Strategy<Value = Edit> {
        let ch = prop_oneof![
            proptest::char::range(' ', '~'),
            Just('\n'),
            Just('\t'),
            any::<char>()
        ];
        prop_oneof![
            (any::<usize>(), ch.clone()).prop_map(|(i, c)| Edit::Replace(i, c)),
            (any::<usize>(), ch).prop_map(|(i, c)| Edit::Insert(i, c)),
            any::<usize>().prop_map(Edit::Delete),
        ]
    }

    /// Case flips of the signature's hex letters are the one edit the reference's
    /// lower-casing compare allows; such edits must still verify rather than fail.
    fn is_case_flip_in_signature(original: &str, edited: &str) -> bool {
        let signature = FENCE.len() + TASK_SIGNATURE_FIELD.len() + 2
            ..FENCE.len() + TASK_SIGNATURE_FIELD.len() + 2 + 64;
        original.len() == edited.len()
            && original
                .bytes()
                .zip(edited.bytes())
                .enumerate()
                .all(|(i, (a, b))| {
                    a == b
                        || (signature.contains(&i)
                            && a.is_ascii_hexdigit()
                            && a.eq_ignore_ascii_case(&b))
                })
    }

    proptest! {
        #[test]
        fn seal_then_verify_round_trips(secret in ".{1,40}", body in any::<String>()) {
            prop_assume!(split_signed(&body).is_err());
            let sealed = seal_task(&secret, &body);
            prop_assert_eq!(verify_task(&secret, &sealed), Ok(body.as_str()));
        }

        #[test]
        fn any_single_edit_fails_verification(body in any::<String>(), edit in any_edit()) {
            prop_assume!(split_signed(&body).is_err());
            let sealed = seal_task(SECRET, &body);
            let edited = apply(&sealed, &edit);
            prop_assume!(edited != sealed);
            if is_case_flip_in_signature(&sealed, &edited) {
                prop_assert_eq!(verify_task(SECRET, &edited), Ok(body.as_str()));
            } else {
                prop_assert!(verify_task(SECRET, &edited).is_err(), "edit {:?} verified: {:?}", edit, edited);
            }
        }

        #[test]
        fn another_secret_fails(a in ".{1,40}", b in ".{1,40}", body in any::<String>()) {
            // HMAC pads its key with zero bytes, so secrets that differ only by trailing NULs
            // are one key (RFC 2104): "." and ".\0" sign alike. Not another secret.
            prop_assume!(a.trim_end_matches('\0') != b.trim_end_matches('\0'));
            let sealed = seal_task(&a, &body);
            prop_assert_eq!(verify_task(&b, &sealed), Err(SignatureError::Mismatch));
        }
    }
}
