//! `POST /improve/score` and `POST /improve/holdout-credential` as the service answers them
//! (reference 8.3). The adapter hands in the headers and the body it read as a bounded
//! stream; the envelope is checked by `improve::report`, the `jti` claimed once in the replay
//! table (scope: the namespace; a store error refuses, fail closed), the holdout manifest read
//! from the holdout store (this module is the only one that holds it), and the attempt judged
//! by `improve::judging` and moved through the `RunStore` in one unit of work.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::ImproveCx;
use crate::error::{Error, Result};
use crate::improve::holdout::{
    HOLDOUT_TOKEN_TTL_MS, HoldoutStore, holdout_prefix, holdout_token_allows, mint_holdout_token,
};
use crate::improve::judging::{BestRecord, Case, JudgeRefusal, check_waiting, judge_report};
use crate::improve::keys::{anchor_key, best_key};
use crate::improve::report::{
    MAX_FIELD_CHARS, ReportRefusal, holdout_pass_rate, parse_report, verify_envelope,
};
use crate::improve::verify_anchor_pin;
use crate::ports::{Advanced, BlobReader, BlobStore};
use crate::service::{Area as _, Service};

/// The scores document of a namespace.
pub const SCORES_PATH: &str = "improve/scores.md";
/// The most holdout objects one credential answer lists (the token reads every one).
pub const MAX_CREDENTIAL_OBJECTS: usize = 1_000;

/// Why a score report or a holdout-credential request was not taken; each has one status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScoreError {
    /// The envelope, the body, the replay table or the holdout manifest refused it.
    #[error(transparent)]
    Refused(#[from] ReportRefusal),
    /// The attempt (or its run) cannot take this report; nothing changed (409).
    #[error(transparent)]
    Judge(#[from] JudgeRefusal),
    /// The namespace's scores document does not parse or its anchor pin does not hold (409).
    #[error("{0}")]
    Scores(String),
    /// A probe report's skill, version or probe set does not hold (409).
    #[error(transparent)]
    Probe(#[from] crate::skills::probe::ProbeRefusal),
    /// A store could not be asked; nothing changed (503).
    #[error("{0}")]
    Unavailable(String),
}

impl ScoreError {
    /// The HTTP status of the refusal.
    pub fn status(&self) -> u16 {
        match self {
            ScoreError::Refused(r) => r.status(),
            ScoreError::Judge(_) | ScoreError::Scores(_) | ScoreError::Probe(_) => 409,
            ScoreError::Unavailable(_) => 503,
        }
    }
}

/// What an accepted score report decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoreAnswer {
    /// Always true.
    pub ok: bool,
    /// The namespace.
    pub namespace: String,
    /// The run.
    pub run_id: String,
    /// The attempt judged.
    pub attempt_id: String,
    /// `kept` or `reverted`.
    pub verdict: String,
    /// Why it was reverted, if it was.
    pub reason: Option<String>,
    /// Holdout cases passed over the manifest's total.
    pub holdout_pass_rate: f64,
    /// The weighted secondary delta against the best record.
    pub secondary_delta: f64,
    /// Secondary metrics compared.
    pub compared: usize,
    /// The run's status now.
    pub run_status: String,
    /// What could not be recorded beside the verdict (a skill's failure note), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One object of a namespace's holdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HoldoutObject {
    /// Its key in the holdout store.
    pub key: String,
    /// A URL the store signed for it (S3), valid as long as the token; `None` for a local
    /// store (read it from this server with the token).
    pub signed_url: Option<String>,
}

/// What a verified holdout-credential request earns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HoldoutCredential {
    /// The namespace.
    pub namespace: String,
    /// Every key under this prefix, nothing else.
    pub scope: String,
    /// Read-only.
    pub access: String,
    /// When it stops working.
    pub expires_at: String,
    /// The bearer token for `GET /improve/holdout/objects/<key>` on this server.
    pub token: String,
    /// The namespace's holdout objects, in key order, at most `MAX_CREDENTIAL_OBJECTS` (1,000).
    pub objects: Vec<HoldoutObject>,
    /// Whether more objects exist than are listed (the token still reads them).
    pub truncated: bool,
}

fn unavailable(what: &str) -> impl Fn(crate::ports::StoreError) -> ScoreError + '_ {
    move |e| ScoreError::Unavailable(format!("{what}: {e}"))
}

fn blob_unavailable(e: crate::ports::BlobError) -> ScoreError {
    ScoreError::Unavailable(format!("the holdout store: {e}"))
}

fn request_jti(body: &[u8]) -> std::result::Result<String, ReportRefusal> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ReportRefusal::BadBody(format!("not JSON: {e}")))?;
    let Some(obj) = value.as_object().filter(|o| o.len() == 1) else {
        return Err(ReportRefusal::BadBody(
            "the body must be {\"jti\": string} and nothing else".into(),
        ));
    };
    match obj.get("jti") {
        Some(Value::String(j))
            if (1..=MAX_FIELD_CHARS).contains(&j.chars().count())
                && !j.chars().any(char::is_control) =>
        {
            Ok(j.clone())
        }
        _ => Err(ReportRefusal::BadBody(format!(
            "jti must be a string of 1-{MAX_FIELD_CHARS} characters and no control character"
        ))),
    }
}

impl Service {
    /// Adds the holdout store; only the scorer path and the holdout credential reach it.
    pub fn with_holdout(mut self, holdout: Arc<dyn BlobStore>) -> Service {
        self.holdout = Some(HoldoutStore::new(holdout));
        self
    }

    /// `POST /improve/score`: takes a signed score report and judges the attempt it names
    /// (the improve area's scorer path).
    pub async fn improve_score(
        &self,
        namespace: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<ScoreAnswer, ScoreError> {
        self.improve()
            .improve_score(namespace, timestamp, signature, body)
            .await
    }

    /// `POST /improve/holdout-credential`: a one-hour read-only credential for the
    /// namespace's holdout prefix, for a request signed as a score report is.
    pub async fn holdout_credential(
        &self,
        namespace: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<HoldoutCredential, ScoreError> {
        self.improve()
            .holdout_credential(namespace, timestamp, signature, body)
            .await
    }

    /// Opens `key` of the holdout store for the holder of a token from
    /// [`Service::holdout_credential`].
    pub async fn read_holdout_object(&self, token: &str, key: &str) -> Result<Box<dyn BlobReader>> {
        self.improve().read_holdout_object(token, key).await
    }

    /// `POST /improve/probe`: a signed skill probe's answer (the evaluation cycle).
    pub async fn improve_probe(
        &self,
        namespace: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<super::ProbeAnswer, ScoreError> {
        self.improve()
            .improve_probe(namespace, timestamp, signature, body)
            .await
    }
}

impl ImproveCx<'_> {
    fn holdout(&self) -> std::result::Result<&HoldoutStore, ScoreError> {
        self.holdout.as_ref().ok_or_else(|| {
            ScoreError::Unavailable("no holdout store is configured (CAPSID_HOLDOUT_URL)".into())
        })
    }

    /// Claims `jti` for `namespace`: a replay is 409, a store that cannot answer 503.
    async fn claim_report_jti(
        &self,
        namespace: &str,
        jti: &str,
    ) -> std::result::Result<(), ScoreError> {
        match self.settings.claim_nonce(namespace, jti, self.now()).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(ReportRefusal::Replayed(jti.to_owned()).into()),
            Err(e) => Err(ReportRefusal::ReplayUnknown(e.to_string()).into()),
        }
    }

    /// Takes a signed score report and judges the attempt it names.
    pub(crate) async fn improve_score(
        &self,
        namespace: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<ScoreAnswer, ScoreError> {
        let now = self.now();
        let root = self.config.signing_secret.as_deref();
        let ns = verify_envelope(root, namespace, timestamp, signature, body, now)?;
        let report = parse_report(ns, body)?;
        self.claim_report_jti(ns, &report.jti).await?;
        let manifest = self
            .holdout()?
            .manifest(ns)
            .await
            .map_err(blob_unavailable)?;
        let pass_rate = holdout_pass_rate(&report, manifest.as_ref())?;

        let attempt = self
            .runs
            .attempt(&report.attempt_id)
            .await
            .map_err(unavailable("the attempts table"))?;
        let run = match &attempt {
            Some(a) => self
                .runs
                .run(&a.run_id)
                .await
                .map_err(unavailable("the runs table"))?,
            None => None,
        };
        check_waiting(&report, attempt.as_ref(), run.as_ref(), now)?;
        let (Some(attempt), Some(run)) = (attempt, run) else {
            return Err(JudgeRefusal::NoAttempt(report.attempt_id.clone(), ns.to_owned()).into());
        };
        let scores_md = self
            .docs
            .document(ns, SCORES_PATH)
            .await
            .map_err(unavailable("the documents table"))?
            .and_then(|d| d.body)
            .ok_or_else(|| ScoreError::Scores(format!("{ns}/{SCORES_PATH} does not exist")))?;
        let pinned = self
            .settings
            .setting(&anchor_key(ns), now)
            .await
            .map_err(unavailable("the settings table"))?;
        let doc = verify_anchor_pin(ns, &scores_md, pinned.as_deref())
            .map_err(|e| ScoreError::Scores(e.to_string()))?;
        let best = BestRecord::from_setting(
            self.settings
                .setting(&best_key(ns), now)
                .await
                .map_err(unavailable("the settings table"))?
                .as_deref(),
        );
        let baseline = self
            .runs
            .scores(&run.id, None)
            .await
            .map_err(unavailable("the scores table"))?
            .into_iter()
            .map(|s| (s.metric, s.value))
            .collect();
        let judged = judge_report(
            Case {
                report: &report,
                pass_rate,
                doc: &doc,
                best: best.as_ref(),
                baseline: &baseline,
                attempt: &attempt,
                run: &run,
            },
            now,
        )?;
        match self
            .runs
            .advance(judged.advance)
            .await
            .map_err(unavailable("the runs table"))?
        {
            Advanced::Applied => {}
            Advanced::Lost => {
                return Err(JudgeRefusal::NotAwaiting(format!(
                    "attempt '{}' was judged or moved by another writer first: nothing changed",
                    attempt.id
                ))
                .into());
            }
        }
        // A reverted attempt's branch goes (best effort: the run's finish tries again); a
        // kept one's pull request stays open for the seat.
        if let (true, Some(branch)) = (judged.verdict.is_revert(), attempt.branch.as_deref()) {
            self.discard_branch(ns, branch).await;
        }
        let mut skill_note = None;
        // A reverted attempt that followed a skill leaves that skill a failure note (memory
        // for the next offer; it moves no status). Best effort: the verdict already stands.
        if let (true, Some(skill)) = (judged.verdict.is_revert(), attempt.skill_id.as_deref()) {
            let note: String = format!(
                "reverted: {}",
                judged
                    .reason
                    .as_deref()
                    .unwrap_or("the score did not improve")
            )
            .chars()
            .take(1024)
            .collect();
            let row = crate::ports::SkillFailureRow {
                skill: skill.to_owned(),
                namespace: ns.to_owned(),
                source_kind: "attempt".into(),
                source_id: attempt.id.clone(),
                note,
                created_at: now,
            };
            let audit = crate::ports::AuditEntry {
                actor: crate::improve::judging::LOOP_ACTOR.to_owned(),
                action: "skill-failure-noted".into(),
                namespace: Some(ns.to_owned()),
                path: Some(format!("improve/skills/{skill}.md")),
                params: serde_json::json!({"skill": skill, "attempt": attempt.id}),
                at: now,
            };
            if let Err(e) = self.skills.record_skill_failure(row, audit).await {
                skill_note = Some(format!("skill {skill}: failure note not written: {e}"));
            }
        }
        Ok(ScoreAnswer {
            ok: true,
            namespace: ns.to_owned(),
            run_id: run.id,
            attempt_id: attempt.id,
            verdict: judged.verdict.as_str().to_owned(),
            reason: judged.reason,
            holdout_pass_rate: pass_rate,
            secondary_delta: judged.delta,
            compared: judged.compared,
            run_status: judged.run_status.as_str().to_owned(),
            note: skill_note,
        })
    }

    /// Mints a one-hour read-only credential for the namespace's holdout prefix, for a
    /// request signed as a score report is, body `{"jti": "<unique>"}`.
    pub(crate) async fn holdout_credential(
        &self,
        namespace: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<HoldoutCredential, ScoreError> {
        let now = self.now();
        let root = self.config.signing_secret.as_deref();
        let ns = verify_envelope(root, namespace, timestamp, signature, body, now)?;
        let root = root.ok_or(ReportRefusal::NotConfigured)?;
        let jti = request_jti(body)?;
        self.claim_report_jti(ns, &jti).await?;
        let holdout = self.holdout()?;
        let expires = now.plus_millis(HOLDOUT_TOKEN_TTL_MS);
        let keys = holdout.keys(ns).await.map_err(blob_unavailable)?;
        let truncated = keys.len() > MAX_CREDENTIAL_OBJECTS;
        let mut objects = Vec::new();
        for key in keys.into_iter().take(MAX_CREDENTIAL_OBJECTS) {
            let signed_url = holdout
                .signed_url(ns, &key, HOLDOUT_TOKEN_TTL_MS)
                .await
                .map_err(blob_unavailable)?;
            objects.push(HoldoutObject { key, signed_url });
        }
        Ok(HoldoutCredential {
            namespace: ns.to_owned(),
            scope: holdout_prefix(ns),
            access: "read".to_owned(),
            expires_at: expires.to_string(),
            token: mint_holdout_token(root, ns, expires),
            objects,
            truncated,
        })
    }

    /// Opens `key` of the holdout store for the holder of a token from
    /// [`Service::holdout_credential`]: `Forbidden` unless the token is live and `key` lies
    /// under the token's namespace prefix.
    pub(crate) async fn read_holdout_object(
        &self,
        token: &str,
        key: &str,
    ) -> Result<Box<dyn BlobReader>> {
        let Some(root) = self.config.signing_secret.as_deref() else {
            return Err(Error::Unavailable(
                "the signing secret is not configured".to_owned(),
            ));
        };
        if !holdout_token_allows(root, token, key, self.now()) {
            return Err(Error::Forbidden(
                "the holdout read token is missing, expired or not this server's, or the key is outside its namespace's improve/holdout/<ns>/ prefix".to_owned(),
            ));
        }
        let namespace = token.split('.').next().unwrap_or_default();
        let holdout = self
            .holdout
            .as_ref()
            .ok_or_else(|| Error::Unavailable("no holdout store is configured".to_owned()))?;
        holdout
            .reader(namespace, key)
            .await
            .map_err(crate::service::backup::blob_error)
    }
}

#[cfg(test)]
mod tests {
    //! Fail closed: a replay table that cannot answer refuses the report (503) before any
    //! other table is touched, and an unset secret touches nothing at all.
    use std::sync::Arc;

    use futures::executor::block_on;

    use super::*;
    use crate::ids::CountingEntropy;
    use crate::improve::report::sign_report;
    use crate::service::ServiceConfig;
    use crate::service::recording_store::RecordingStore;
    use crate::time::{ManualClock, Timestamp};

    const TS: &str = "2026-12-01T03:00:00Z";
    const BODY: &str = r#"{"namespace":"capsid","run_id":"capsid-2026-12-01T03-00-00","attempt_id":"capsid-2026-12-01T03-00-00-a01","head_sha":"0123456789abcdef0123456789abcdef01234567","jti":"j-0001","anchors":{"tests_pass":1},"secondary":{"bundle_kb":412.5,"lint_warnings":null},"holdout":{"total":40,"passed":38},"ci_minutes":6.5}"#;

    fn service(store: Arc<RecordingStore>, secret: Option<&str>) -> Service {
        Service::new(
            store,
            Arc::new(ManualClock::new(Timestamp::parse(TS).expect("instant"))),
            Arc::new(CountingEntropy::default()),
            ServiceConfig {
                signing_secret: secret.map(str::to_owned),
                operator_keys: Vec::new(),
                ..Default::default()
            },
        )
    }

    #[test]
    fn a_replay_table_that_cannot_answer_refuses_the_report() {
        let store = Arc::new(RecordingStore::default());
        let s = service(store.clone(), Some("root"));
        let sig = sign_report("root", "capsid", TS, BODY.as_bytes());
        let refused =
            block_on(s.improve_score(Some("capsid"), Some(TS), Some(&sig), BODY.as_bytes()))
                .expect_err("refused");
        assert_eq!(refused.status(), 503, "{refused}");
        assert!(matches!(
            refused,
            ScoreError::Refused(ReportRefusal::ReplayUnknown(_))
        ));
        assert_eq!(store.touches(), ["claim_nonce"]);
        let credential = block_on(s.holdout_credential(
            Some("capsid"),
            Some(TS),
            Some(&sign_report("root", "capsid", TS, br#"{"jti":"c"}"#)),
            br#"{"jti":"c"}"#,
        ))
        .expect_err("refused");
        assert_eq!(credential.status(), 503, "{credential}");
        assert!(matches!(
            credential,
            ScoreError::Refused(ReportRefusal::ReplayUnknown(_))
        ));
        assert_eq!(store.touches(), ["claim_nonce", "claim_nonce"]);
    }

    #[test]
    fn an_unset_secret_touches_nothing() {
        let store = Arc::new(RecordingStore::default());
        let s = service(store.clone(), None);
        let refused =
            block_on(s.improve_score(Some("capsid"), Some(TS), Some("00"), BODY.as_bytes()))
                .expect_err("refused");
        assert_eq!(refused.status(), 503);
        assert!(matches!(
            refused,
            ScoreError::Refused(ReportRefusal::NotConfigured)
        ));
        assert!(store.touches().is_empty());
    }
}
