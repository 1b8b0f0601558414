//! `improve_run` action `run`: opens tonight's run now for one roster namespace, or for every
//! roster namespace the caller may reach, through the same standing and opening the nightly
//! opener uses (`night.rs`); with `dry_run`, who may run and why not, writing nothing.

use super::{
    ImproveCx, ImproveRunAnswer, NamespaceRefused, RunOpened, RunOpenedIn, RunOpening, RunRefused,
    RunWouldOpen,
};
use crate::error::{Error, Result};
use crate::improve::keys::ROSTER_KEY;
use crate::improve::roster::{ImproveMode, Roster, RunCondition};
use crate::service::Area as _;

impl ImproveCx<'_> {
    /// `improve_run` action `run`: opens a run now for one roster namespace, or for every
    /// roster namespace the caller may reach; `dry_run` answers who may run without opening.
    pub(crate) async fn run_action(
        &self,
        caller: &crate::caller::Caller,
        a: &super::RunArgs,
    ) -> Result<ImproveRunAnswer> {
        let name = "run";
        let now = self.now();
        let condition = match &a.condition {
            Some(c) => RunCondition::parse(c.as_str())
                .map_err(|e| Error::Invalid(format!("improve_run: {e}")))?,
            None => RunCondition::Full,
        };
        let mode = self.loop_mode(now).await?;
        if mode == ImproveMode::Off {
            return Ok(super::refuse(
                name,
                "the loop is off: improve_run action mode with value subscription or api turns it on",
            ));
        }
        let roster = Roster::from_setting(self.settings.setting(ROSTER_KEY, now).await?.as_deref());
        let targets: Vec<String> = match &a.namespace {
            Some(ns) => vec![ns.as_str().to_owned()],
            None => roster
                .namespaces()
                .iter()
                .filter(|n| caller.scopes.namespaces.allows(n))
                .cloned()
                .collect(),
        };
        if targets.is_empty() {
            return Ok(super::refuse(
                name,
                "the roster is empty (capsid improve roster add <ns>)",
            ));
        }
        let dry = a.dry_run == Some(true);
        let mut opened = Vec::new();
        let mut refused = Vec::new();
        for ns in &targets {
            if dry {
                match self.standing(ns, mode, now).await? {
                    Ok(_) => opened.push(RunOpening::WouldOpen(RunWouldOpen {
                        namespace: ns.clone(),
                        would_open: true,
                    })),
                    Err(why) => refused.push(NamespaceRefused {
                        namespace: ns.clone(),
                        reason: why,
                    }),
                }
                continue;
            }
            match self.open_run(ns, mode, condition, now).await? {
                Ok(run) => opened.push(RunOpening::Opened(RunOpenedIn {
                    namespace: ns.clone(),
                    run: run.id,
                    status: run.status.as_str(),
                    condition: run.condition,
                    base_sha: run.base_sha,
                })),
                Err(why) => refused.push(NamespaceRefused {
                    namespace: ns.clone(),
                    reason: why,
                }),
            }
        }
        if a.namespace.is_some() && opened.is_empty() {
            let why = refused
                .first()
                .map_or("refused", |r| r.reason.as_str())
                .to_owned();
            return Ok(RunRefused {
                ok: false,
                action: name,
                refusal: why,
                refused,
                dry_run: dry,
            }
            .into());
        }
        Ok(RunOpened {
            ok: true,
            action: name,
            mode: mode.name(),
            opened,
            refused,
            dry_run: dry,
            requested_by: caller.actor(),
        }
        .into())
    }
}
