//! Caller resolution for bearer keys (reference 3.1, order load-bearing): a minted agent by
//! the SHA-256 of its key, a revoked agent's key never falling through, then the legacy
//! operator keys, else nobody.

use super::AgentsCx;
use crate::caller::{Caller, Principal, bearer_token, match_operator_key};
use crate::crypto::{ct_eq, sha256_hex};
use crate::error::Result;
use crate::jobs::run_credential;
use crate::scope::Scopes;
use crate::service::Area;

/// Who a bearer key belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// A minted agent; `last_seen` should be touched after the answer.
    Agent(Caller),
    /// A legacy operator key.
    OperatorKey(Caller),
    /// Nobody (missing, malformed, unknown or revoked key).
    Unauthenticated,
}

impl Resolved {
    /// The caller, if any.
    pub fn caller(&self) -> Option<&Caller> {
        match self {
            Resolved::Agent(c) | Resolved::OperatorKey(c) => Some(c),
            Resolved::Unauthenticated => None,
        }
    }
}

impl AgentsCx<'_> {
    /// Resolves an `Authorization` header value.
    pub async fn resolve_bearer(&self, authorization: Option<&str>) -> Result<Resolved> {
        let Some(token) = authorization.and_then(bearer_token) else {
            return Ok(Resolved::Unauthenticated);
        };
        if token.starts_with(run_credential::PREFIX) {
            return self.resolve_run(token).await;
        }
        let hash = sha256_hex(token);
        if let Some(row) = self.agents.agent_by_key_hash(&hash).await? {
            if row.revoked_at.is_some() || !ct_eq(&row.key_hash, &hash) {
                return Ok(Resolved::Unauthenticated);
            }
            let kind = row.kind;
            return Ok(Resolved::Agent(Caller::agent(
                row.id,
                row.name,
                kind,
                Scopes::parse(Some(&row.scopes)),
            )));
        }
        Ok(
            match match_operator_key(&self.config.operator_keys, &hash) {
                Some(grant) => Resolved::OperatorKey(Caller::operator_key(grant, &hash)),
                None => Resolved::Unauthenticated,
            },
        )
    }

    /// A run credential: the job it names, still claimed in the claim it was issued for by a
    /// live driver, makes it a [`Principal::Run`] with [`run_credential::run_scopes`].
    async fn resolve_run(&self, token: &str) -> Result<Resolved> {
        let (Some(secret), Some(job_id)) = (
            self.config.signing_secret(),
            run_credential::job_id_of(token),
        ) else {
            return Ok(Resolved::Unauthenticated);
        };
        let Some(job) = self.jobs.job(job_id).await? else {
            return Ok(Resolved::Unauthenticated);
        };
        // Whatever the reason (another claim, the lease over, forged), the caller is nobody.
        let Ok(driver) = run_credential::verify(secret, token, &job, self.now()) else {
            return Ok(Resolved::Unauthenticated);
        };
        let driver = driver.to_owned();
        // The driver itself must still be a live agent: revoking it ends its runs too.
        match self.agents.agent_by_name(&driver).await? {
            Some(row) if row.revoked_at.is_none() => {}
            _ => return Ok(Resolved::Unauthenticated),
        }
        // What the run may do follows its role as the namespace defines it now (a role whose
        // document stopped being signed gives its runs no role's powers).
        let role = crate::service::roles::RoleDocs {
            docs: self.docs,
            audit_log: self.audit_log,
            config: self.config,
        }
        .of_job(&job.namespace, job.role.as_deref())
        .await?;
        Ok(Resolved::Agent(Caller {
            principal: Principal::Run {
                driver,
                job_id: job.id.clone(),
            },
            scopes: run_credential::run_scopes(&job.namespace, role.as_ref()),
        }))
    }

    /// `caller` as it stands now, for a caller resolved earlier and kept (a resource
    /// subscription): a minted agent with its current scopes, none once it is revoked or its
    /// name names another agent; a run credential's caller while its driver is live and still
    /// holds the job in a live claim; anyone else (operator keys, the owner) as they are.
    pub async fn refresh(&self, caller: &Caller) -> Result<Option<Caller>> {
        match &caller.principal {
            Principal::Agent { id, name, .. } => Ok(self
                .agents
                .agent_by_name(name)
                .await?
                .filter(|row| row.revoked_at.is_none() && &row.id == id)
                .map(|row| {
                    let scopes = Scopes::parse(Some(&row.scopes));
                    Caller::agent(row.id, row.name, row.kind, scopes)
                })),
            Principal::Run { driver, job_id } => {
                let live = self
                    .agents
                    .agent_by_name(driver)
                    .await?
                    .is_some_and(|row| row.revoked_at.is_none());
                let held = live
                    && self
                        .jobs
                        .job(job_id)
                        .await?
                        .is_some_and(|job| run_credential::still_held(&job, driver, self.now()));
                Ok(held.then(|| caller.clone()))
            }
            _ => Ok(Some(caller.clone())),
        }
    }

    /// The `last_seen` stamp for a minted agent, after its call was answered. Best effort:
    /// the caller logs a failure and carries on.
    pub async fn touch_last_seen(&self, caller: &Caller) -> Result<()> {
        if let crate::caller::Principal::Agent { id, .. } = &caller.principal {
            self.agents.touch_agent(id, self.now()).await?;
        }
        Ok(())
    }
}
