//! Work from the issue tracker (issue 37): the signed intake policy (`capsid/policy/intake.md`)
//! names namespaces, a label and optionally the issue authors it admits; an open issue of a
//! named namespace's repository with the label becomes one signed job, and the loop between
//! the issue and its job closes by the rules here. Pure: `service::intake` reads GitHub and
//! the store and applies them.
//!
//! - `policy.rs`: the policy document's fields, each refusal naming its field.
//! - `issue.rs`: an issue's job (title, body, the digest an edit is noticed by) and the
//!   comments the intake writes on the issue.
//! - `follow.rs`: what the intake does about a recorded issue given its job and the issue now.

pub mod follow;
pub mod issue;
pub mod policy;

pub use follow::{FollowUp, IssueNow, follow_up, issue_now};
pub use issue::{body_digest, issue_job_body, issue_job_title};
pub use policy::{
    DEFAULT_LABEL, INTAKE_ACTOR, INTAKE_POLICY_PATH, IntakePolicy, IntakePolicyError,
    parse_intake_policy,
};
