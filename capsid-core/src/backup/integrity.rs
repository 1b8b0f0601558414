//! What proves a dump is the one that was taken, and under which secret: the manifest lists
//! the SHA-256 of every file of the run, and its integrity block carries an HMAC-SHA256 over
//! the manifest under a key derived from the signing secret (never the secret itself) and a
//! fingerprint of that secret (another derivation, so the fingerprint reveals neither the
//! secret nor the key). A restore decides here, before it writes anything, whether the dump
//! may be restored ([`check_provenance`], then [`check_digest`] per file).

use serde::{Deserialize, Serialize};

use super::manifest::{DumpRefusal, Manifest};
use crate::crypto::{ct_eq, hmac_sha256};

/// The integrity block's algorithm.
pub const ALGORITHM: &str = "hmac-sha256";
/// The label the manifest's HMAC key is derived with: `HMAC(secret, label)`.
pub const DUMP_KEY_LABEL: &str = "capsid-dump-v1";
/// The label the secret's fingerprint is derived with (a different one, so the fingerprint
/// is not the key).
pub const FINGERPRINT_LABEL: &str = "capsid-dump-secret-fingerprint-v1";

/// A manifest's integrity block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Integrity {
    /// [`ALGORITHM`].
    pub algorithm: String,
    /// [`DUMP_KEY_LABEL`]: which derivation of the secret keys the HMAC.
    pub key_label: String,
    /// [`secret_fingerprint`] of the secret the dump was made under.
    pub secret_fingerprint: String,
    /// Hex HMAC-SHA256 of the manifest with this field empty.
    pub mac: String,
}

/// What a restore knows of a dump's origin once [`check_provenance`] let it through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Digests and HMAC verified under this store's secret (the digests file by file).
    Sealed,
    /// No integrity block, restored because the operator said so.
    Unverified,
    /// Made under another secret (or unsealed, or no secret here to check it): its origin is
    /// unproven, restored because the operator confirmed re-signing its queue under this
    /// store's secret.
    ReSigned,
}

impl Provenance {
    /// How a report says it.
    pub fn describe(self) -> &'static str {
        match self {
            Provenance::Sealed => {
                "sealed: every file's SHA-256 and the manifest's HMAC verified under this store's signing secret"
            }
            Provenance::Unverified => {
                "UNVERIFIED: the dump carries no digests or HMAC; restored because --accept-unverified was given"
            }
            Provenance::ReSigned => {
                "UNVERIFIED ORIGIN, RE-SIGNED: the dump was not made under this store's signing secret, so nothing proves where it came from; restored because --re-sign --confirm-unverified-origin was given: queued and blocked jobs re-signed under this store's secret, signed policies restored disabled and unsigned"
            }
        }
    }
}

/// What the operator allows beyond a sealed dump made under this store's secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Restore a dump that carries no integrity block (made before dumps were sealed).
    pub accept_unverified: bool,
    /// The old secret is lost: restore a dump made under another secret (or unsealed), re-sign
    /// its queued and blocked jobs under this store's secret and restore its signed policies
    /// disabled and unsigned. A dump whose HMAC fails under the secret it names is still
    /// refused, and this store must have a secret to sign with.
    pub re_sign: bool,
    /// Who asked (the audit rows' `cli:<operator>`); `restore` when not given.
    pub operator: Option<String>,
}

/// The first schema version every dump of which this project's builds seal: sealing came
/// with the builds at `0017`, before `0018` was added, so an unsealed dump of `0018` or later
/// had its seal removed (or was made by a server without a signing secret).
pub const SEALED_SINCE: &str = "0018_budgets";

/// [`SEALED_SINCE`]'s number.
const SEALED_SINCE_SCHEMA: u32 = 18;

fn dump_key(secret: &str) -> [u8; 32] {
    hmac_sha256(secret.as_bytes(), DUMP_KEY_LABEL)
}

/// The fingerprint of a signing secret: 32 hex characters of `HMAC(secret,
/// FINGERPRINT_LABEL)`. Safe to print and to keep in a dump.
pub fn secret_fingerprint(secret: &str) -> String {
    hex::encode(&hmac_sha256(secret.as_bytes(), FINGERPRINT_LABEL)[..16])
}

/// The bytes the HMAC covers: the manifest as this build renders it, with the MAC empty.
fn signed_bytes(manifest: &Manifest) -> Vec<u8> {
    let mut unsigned = manifest.clone();
    if let Some(integrity) = unsigned.integrity.as_mut() {
        integrity.mac.clear();
    }
    serde_json::to_vec(&unsigned).unwrap_or_default()
}

fn mac_of(manifest: &Manifest, secret: &str) -> String {
    let key = dump_key(secret);
    hex::encode(hmac_sha256(key, signed_bytes(manifest)))
}

/// Seals `manifest` under `secret`: the integrity block, its HMAC last.
pub fn seal(manifest: &mut Manifest, secret: &str) {
    manifest.integrity = Some(Integrity {
        algorithm: ALGORITHM.to_owned(),
        key_label: DUMP_KEY_LABEL.to_owned(),
        secret_fingerprint: secret_fingerprint(secret),
        mac: String::new(),
    });
    let mac = mac_of(manifest, secret);
    if let Some(integrity) = manifest.integrity.as_mut() {
        integrity.mac = mac;
    }
}

/// Whether `manifest` (read from `key`) may be restored into a store whose signing secret is
/// `secret`, in this order: a dump with no integrity block only when `options` accept one;
/// a block of an unknown kind is refused; no secret here, or another secret's fingerprint,
/// is a foreign dump; then the HMAC; then a sealed manifest must list a digest for every
/// file. The files' digests are checked afterwards, file by file, with [`check_digest`].
pub fn check_provenance(
    key: &str,
    manifest: &Manifest,
    secret: Option<&str>,
    options: &RestoreOptions,
) -> Result<Provenance, DumpRefusal> {
    let Some(integrity) = &manifest.integrity else {
        let postdates_sealing = manifest
            .schema_version
            .as_deref()
            .and_then(super::manifest::schema_number)
            .is_some_and(|n| n >= SEALED_SINCE_SCHEMA);
        return if options.re_sign && secret.is_some() {
            Ok(Provenance::ReSigned)
        } else if postdates_sealing {
            Err(DumpRefusal::SealRemoved {
                run: manifest.run.clone(),
                schema: manifest.schema_version.clone().unwrap_or_default(),
                sealed_since: SEALED_SINCE,
            })
        } else if options.accept_unverified {
            Ok(Provenance::Unverified)
        } else {
            Err(DumpRefusal::Unsealed {
                run: manifest.run.clone(),
            })
        };
    };
    if integrity.algorithm != ALGORITHM || integrity.key_label != DUMP_KEY_LABEL {
        return Err(DumpRefusal::BadManifest {
            key: key.to_owned(),
            why: format!(
                "its integrity block is {} keyed by '{}', this build knows {ALGORITHM} keyed by '{DUMP_KEY_LABEL}'",
                integrity.algorithm, integrity.key_label
            ),
        });
    }
    let Some(secret) = secret else {
        return Err(DumpRefusal::NoSecret {
            dump: integrity.secret_fingerprint.clone(),
        });
    };
    let here = secret_fingerprint(secret);
    if !ct_eq(&here, &integrity.secret_fingerprint) {
        if options.re_sign {
            return Ok(Provenance::ReSigned);
        }
        return Err(DumpRefusal::ForeignSecret {
            dump: integrity.secret_fingerprint.clone(),
            here,
        });
    }
    if !ct_eq(mac_of(manifest, secret), &integrity.mac) {
        return Err(DumpRefusal::Altered {
            key: key.to_owned(),
            why: "its HMAC does not verify under this store's signing secret: the manifest was edited after the dump was made".to_owned(),
        });
    }
    for listed in manifest.tables.iter().chain([&manifest.settings]) {
        if listed.sha256.is_none() {
            return Err(DumpRefusal::BadManifest {
                key: key.to_owned(),
                why: format!("it is sealed but lists no SHA-256 for {}", listed.key),
            });
        }
    }
    if manifest.holdout_manifests.is_some() && manifest.holdout_manifests_sha256.is_none() {
        return Err(DumpRefusal::BadManifest {
            key: key.to_owned(),
            why: "it is sealed but lists no SHA-256 for the holdout sidecar".to_owned(),
        });
    }
    Ok(Provenance::Sealed)
}

/// Checks the SHA-256 `found` of the file at `key` against the manifest's `expected` (none:
/// an unsealed dump, nothing to check).
pub fn check_digest(key: &str, expected: Option<&str>, found: &str) -> Result<(), DumpRefusal> {
    match expected {
        Some(expected) if !ct_eq(expected, found) => Err(DumpRefusal::Altered {
            key: key.to_owned(),
            why: format!(
                "its SHA-256 is {found}, the manifest says {expected}: the file was changed after the dump was made"
            ),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::manifest::{ManifestTable, tests::manifest};

    fn sealed(secret: &str) -> Manifest {
        let mut m = manifest();
        for t in m.tables.iter_mut().chain([&mut m.settings]) {
            t.sha256 = Some(crate::crypto::sha256_hex(&t.key));
        }
        seal(&mut m, secret);
        m
    }

    const STRICT: RestoreOptions = RestoreOptions {
        accept_unverified: false,
        re_sign: false,
        operator: None,
    };

    #[test]
    fn a_sealed_manifest_verifies_under_its_secret_only() {
        let m = sealed("s1");
        assert_eq!(
            check_provenance("k", &m, Some("s1"), &STRICT),
            Ok(Provenance::Sealed)
        );
        assert!(matches!(
            check_provenance("k", &m, Some("s2"), &STRICT),
            Err(DumpRefusal::ForeignSecret { ref dump, ref here })
                if *dump == secret_fingerprint("s1") && *here == secret_fingerprint("s2")
        ));
        assert!(matches!(
            check_provenance("k", &m, None, &STRICT),
            Err(DumpRefusal::NoSecret { .. })
        ));
        let text = check_provenance("k", &m, Some("s2"), &STRICT)
            .expect_err("foreign")
            .to_string();
        assert!(
            text.contains("signing.key") && text.contains("CAPSID_SIGNING_SECRET"),
            "{text}"
        );
    }

    #[test]
    fn any_edit_of_a_sealed_manifest_breaks_its_hmac() {
        let m = sealed("s1");
        let edits: [fn(&mut Manifest); 6] = [
            |m| m.tables[3].rows += 1,
            |m| m.tables[0].sha256 = Some("00".repeat(32)),
            |m| m.schema_version = Some("0001_init".into()),
            |m| m.settings.rows = 5,
            |m| m.exported_at = "2026-03-01T09:00:01.000Z".into(),
            |m| {
                m.tables.push(ManifestTable {
                    table: "agents".into(),
                    rows: 1,
                    key: "x".into(),
                    sha256: None,
                });
            },
        ];
        for edit in edits {
            let mut altered = m.clone();
            edit(&mut altered);
            assert!(
                matches!(
                    check_provenance("manifest.json", &altered, Some("s1"), &STRICT),
                    Err(DumpRefusal::Altered { ref key, .. }) if key == "manifest.json"
                ),
                "{altered:?}"
            );
        }
    }

    #[test]
    fn a_dump_whose_schema_postdates_sealing_is_never_an_old_unsealed_one() {
        // Issue 53, item 7: the seal of a dump this build made, removed.
        let mut stripped = sealed("s1");
        stripped.schema_version = Some("0023_job_calls".into());
        stripped.integrity = None;
        let lenient = RestoreOptions {
            accept_unverified: true,
            ..RestoreOptions::default()
        };
        for options in [&STRICT, &lenient] {
            let refused = check_provenance("k", &stripped, Some("s1"), options);
            assert!(
                matches!(refused, Err(DumpRefusal::SealRemoved { ref schema, .. }) if schema == "0023_job_calls"),
                "{refused:?}"
            );
            let said = refused.expect_err("refused").to_string();
            assert!(
                said.contains("seal was removed") && !said.contains("--accept-unverified"),
                "{said}"
            );
        }
        // The first sealed schema is refused too; the one before it is an old dump.
        stripped.schema_version = Some(SEALED_SINCE.into());
        assert!(matches!(
            check_provenance("k", &stripped, Some("s1"), &lenient),
            Err(DumpRefusal::SealRemoved { .. })
        ));
        stripped.schema_version = Some("0017_skill_sources".into());
        assert_eq!(
            check_provenance("k", &stripped, Some("s1"), &lenient),
            Ok(Provenance::Unverified)
        );
        // --re-sign (which lists what the dump brings in first) is the way through.
        stripped.schema_version = Some("0023_job_calls".into());
        let re_sign = RestoreOptions {
            re_sign: true,
            ..RestoreOptions::default()
        };
        assert_eq!(
            check_provenance("k", &stripped, Some("s1"), &re_sign),
            Ok(Provenance::ReSigned)
        );
    }

    #[test]
    fn an_unsealed_dump_needs_the_operators_word() {
        let m = manifest();
        assert!(matches!(
            check_provenance("k", &m, Some("s1"), &STRICT),
            Err(DumpRefusal::Unsealed { .. })
        ));
        let lenient = RestoreOptions {
            accept_unverified: true,
            ..RestoreOptions::default()
        };
        assert_eq!(
            check_provenance("k", &m, Some("s1"), &lenient),
            Ok(Provenance::Unverified)
        );
        // The option does not weaken a sealed dump's checks.
        let mut altered = sealed("s1");
        altered.tables[0].rows += 1;
        assert!(check_provenance("k", &altered, Some("s1"), &lenient).is_err());
        assert!(check_provenance("k", &sealed("s1"), Some("s2"), &lenient).is_err());
    }

    #[test]
    fn re_signing_takes_a_foreign_dump_but_never_an_altered_one_or_one_with_no_secret_here() {
        let re_sign = RestoreOptions {
            re_sign: true,
            ..RestoreOptions::default()
        };
        assert_eq!(
            check_provenance("k", &sealed("old"), Some("new"), &re_sign),
            Ok(Provenance::ReSigned)
        );
        assert_eq!(
            check_provenance("k", &manifest(), Some("new"), &re_sign),
            Ok(Provenance::ReSigned)
        );
        // Under its own secret the dump is simply sealed: nothing needs re-signing.
        assert_eq!(
            check_provenance("k", &sealed("s1"), Some("s1"), &re_sign),
            Ok(Provenance::Sealed)
        );
        // Nothing to sign with here.
        assert!(matches!(
            check_provenance("k", &sealed("old"), None, &re_sign),
            Err(DumpRefusal::NoSecret { .. })
        ));
        assert!(matches!(
            check_provenance("k", &manifest(), None, &re_sign),
            Err(DumpRefusal::Unsealed { .. })
        ));
        // A dump that names this secret but whose HMAC fails was edited: refused anyway.
        let mut altered = sealed("s1");
        altered.tables[0].rows += 1;
        assert!(matches!(
            check_provenance("k", &altered, Some("s1"), &re_sign),
            Err(DumpRefusal::Altered { .. })
        ));
    }

    #[test]
    fn a_sealed_manifest_must_list_every_digest_and_a_known_block() {
        let mut m = manifest();
        seal(&mut m, "s1");
        assert!(matches!(
            check_provenance("k", &m, Some("s1"), &STRICT),
            Err(DumpRefusal::BadManifest { ref why, .. }) if why.contains("SHA-256")
        ));
        let mut other = sealed("s1");
        if let Some(i) = other.integrity.as_mut() {
            i.key_label = "capsid-dump-v9".into();
        }
        assert!(matches!(
            check_provenance("k", &other, Some("s1"), &STRICT),
            Err(DumpRefusal::BadManifest { .. })
        ));
    }

    #[test]
    fn the_fingerprint_is_neither_the_secret_nor_the_key() {
        let fp = secret_fingerprint("correct horse");
        assert_eq!(fp.len(), 32);
        assert!(!fp.contains("correct"));
        assert!(!hex::encode(dump_key("correct horse")).starts_with(&fp));
        assert_ne!(fp, secret_fingerprint("correct horsf"));
    }

    #[test]
    fn digests_compare_or_name_the_file() {
        assert!(check_digest("a.json", Some("ab"), "ab").is_ok());
        assert!(check_digest("a.json", None, "ab").is_ok());
        let r = check_digest("backups/json/r/jobs.json", Some("ab"), "cd").expect_err("altered");
        assert!(r.to_string().contains("backups/json/r/jobs.json"), "{r}");
    }
}
