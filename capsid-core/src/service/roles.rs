//! A namespace's roles as the server reads them (issue 55, item 1): the built-in ones, tuned
//! and added to by the owner's signed role documents (`capsid/policy/roles/<namespace>/<name>.md`,
//! see [`crate::jobs::role`]). A document unsigned, edited after signing or unparseable
//! defines nothing: a built-in role stays as built, an owner's role does not exist (a post
//! naming it is refused with why; a run credential of a job naming it gets no role's powers).

use crate::autonomy::policy::POLICY_NAMESPACE;
use crate::error::Result;
use crate::jobs::role::{
    self, ROLE_DOC_DIR, ROLE_DOCS_MAX, Role, RoleBook, parse_role_doc, role_doc_path,
};
use crate::ports::{AuditLog, DocumentStore};
use crate::service::ServiceConfig;
use crate::service::autonomy::{PolicyState, signed_policy_body};

/// Where a role's definition is read from.
#[derive(Clone, Copy)]
pub(crate) struct RoleDocs<'a> {
    /// The `capsid` namespace's documents.
    pub docs: &'a dyn DocumentStore,
    /// The `policy-signed` rows a signature must match.
    pub audit_log: &'a dyn AuditLog,
    /// The signing secret.
    pub config: &'a ServiceConfig,
}

impl RoleDocs<'_> {
    /// The role `name` names in `namespace` now: its signed document's, else the built-in one;
    /// or why there is none (no such role, or its document defines nothing, and why).
    pub(crate) async fn role(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<std::result::Result<Role, String>> {
        let name = name.trim();
        if !role::valid_role_name(name) {
            return Ok(Err(format!(
                "{name:?} is not a role name (1 to {} lower-case letters, digits or dashes)",
                role::ROLE_NAME_MAX
            )));
        }
        let path = role_doc_path(namespace, name);
        let built_in = role::BUILT_IN.iter().find(|r| r.name == name);
        Ok(match (self.defined(&path).await?, built_in) {
            (Ok(r), _) => Ok(r),
            (Err(_), Some(b)) => Ok(b.clone()),
            (Err(why), None) => Err(why),
        })
    }

    /// The role a stored job of `namespace` names (`None`: no role, or none defined now).
    pub(crate) async fn of_job(&self, namespace: &str, role: Option<&str>) -> Result<Option<Role>> {
        Ok(match role {
            Some(name) => self.role(namespace, name).await?.ok(),
            None => None,
        })
    }

    /// Every role of `namespace`: the built-in ones as its documents tune them, and its
    /// owner's, with the documents that define nothing.
    pub(crate) async fn book(&self, namespace: &str) -> Result<RoleBook> {
        let glob = format!("{ROLE_DOC_DIR}{namespace}/*");
        let docs = self
            .docs
            .find_documents(Some(POLICY_NAMESPACE), &glob, ROLE_DOCS_MAX)
            .await?;
        let (mut defined, mut inert) = (Vec::new(), Vec::new());
        for doc in docs {
            match self.defined(&doc.path).await? {
                Ok(r) => defined.push(r),
                Err(why) => inert.push(format!("{}: {why}", doc.path)),
            }
        }
        Ok(RoleBook::new(defined, inert))
    }

    /// The role the document at `path` defines when it is signed and reads; otherwise why not.
    async fn defined(&self, path: &str) -> Result<std::result::Result<Role, String>> {
        let mut state = PolicyState::default();
        let Some(body) = signed_policy_body(
            self.docs,
            self.audit_log,
            self.config,
            path,
            "the role document",
            "it defines nothing",
            &mut state,
        )
        .await?
        else {
            return Ok(Err(state.note.unwrap_or_else(|| "not signed".into())));
        };
        Ok(parse_role_doc(path, &body).map_err(|e| format!("{e}; it defines nothing")))
    }
}
