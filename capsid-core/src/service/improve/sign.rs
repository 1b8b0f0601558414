//! `improve_run` action `sign_policy` (reference 7.2): the admin signs the stored body of a
//! policy document; the signature and its digest are audited with the write.

use serde_json::json;

use super::{ImproveCx, ImproveRunAnswer, PolicySigned, refuse};
use crate::autonomy::policy::POLICY_NAMESPACE;
use crate::caller::Caller;
use crate::crypto::sha256_hex;
use crate::error::Result;
use crate::jobs::signature::{seal_task, split_signed};
use crate::ports::{DocumentWrite, StoreError, WriteGuard};
use crate::service::Area;

impl ImproveCx<'_> {
    /// Signs the stored body of a policy document (reference 7.2): admin only, namespace
    /// `capsid`, path under `policy/`, the body must exist; snapshot, upsert, audit.
    pub(crate) async fn sign_policy(
        &self,
        caller: &Caller,
        ns: Option<&str>,
        path: Option<&str>,
    ) -> Result<ImproveRunAnswer> {
        let name = "sign_policy";
        if ns != Some(POLICY_NAMESPACE) {
            return Ok(refuse(
                name,
                format!("policies live in namespace {POLICY_NAMESPACE}"),
            ));
        }
        let Some(path) = path.filter(|p| p.starts_with("policy/") && !p.contains("..")) else {
            return Ok(refuse(name, "sign_policy needs a path under policy/"));
        };
        let Some(secret) = self.config.signing_secret() else {
            return Ok(refuse(
                name,
                "signing is not configured (CAPSID_SIGNING_SECRET)",
            ));
        };
        let Some(doc) = self.docs.document(POLICY_NAMESPACE, path).await? else {
            return Ok(refuse(
                name,
                format!("no document {POLICY_NAMESPACE}/{path}: write it first, then sign it"),
            ));
        };
        let stored = doc.body_text();
        let (unsigned, resigned) = match split_signed(stored) {
            Ok(parts) => (parts.body.to_owned(), true),
            Err(_) => (stored.to_owned(), false),
        };
        if unsigned.trim().is_empty() {
            return Ok(refuse(name, "the policy body is empty"));
        }
        let sealed = seal_task(secret, &unsigned);
        let signature = split_signed(&sealed)
            .map(|p| p.signature.to_owned())
            .unwrap_or_default();
        let sha = sha256_hex(&sealed);
        let audit = self.audit(
            caller,
            crate::autonomy::anchor::POLICY_SIGNED_ACTION,
            Some(POLICY_NAMESPACE),
            Some(path),
            json!({"signature": signature, "sha256": sha, "bytes": sealed.len(), "resigned": resigned}),
        );
        let write = DocumentWrite {
            namespace: POLICY_NAMESPACE.into(),
            path: path.into(),
            title: doc.title.clone(),
            body: Some(sealed.clone()),
            doc_type: None,
            status: None,
            tags: None,
            links: None,
            at: self.now(),
        };
        match self
            .docs
            .write_document(
                write,
                WriteGuard::Update {
                    expected_body: Some(stored.to_owned()),
                },
                vec![audit],
            )
            .await
        {
            Ok(_) => Ok(PolicySigned {
                ok: true,
                action: name,
                namespace: POLICY_NAMESPACE,
                path: path.to_owned(),
                signature,
                sha256: sha,
                bytes: sealed.len(),
                resigned,
            }
            .into()),
            Err(StoreError::Conflict(_)) | Err(StoreError::NotFound(_)) => Ok(refuse(
                name,
                "the policy changed while it was being signed; read it again and re-sign",
            )),
            Err(e) => Err(e.into()),
        }
    }
}
