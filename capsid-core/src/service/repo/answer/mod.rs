//! What the thirteen repo tools answer: one type per answer shape, built by the handlers and
//! serialized once, so each tool's output schema is its answer's type. The wire text is the
//! reference's: a key that appears only in some answers is an `Option` skipped when absent,
//! a key that is `null` when unknown is an `Option` kept. A mutation's answer carries
//! `audit_warning` when its audit row could not be written ([`Audited`]).

use serde::Serialize;
use serde_json::Value;

mod ci;
mod reads;
mod writes;

pub use ci::*;
pub use reads::*;
pub use writes::*;

/// A mutation's answer: it says so when the audit row of a change already made could not be
/// written.
pub(crate) trait Audited: Serialize {
    /// Adds the warning that the audit row was not written.
    fn warn(&mut self, warning: String);
}

/// An answer kept as plain JSON (what a failed change audits).
impl Audited for Value {
    fn warn(&mut self, warning: String) {
        if let Value::Object(map) = self {
            map.insert("audit_warning".into(), Value::String(warning));
        }
    }
}

/// Mutation answers whose `audit_warning` field is the warning.
macro_rules! audited {
    ($($answer:ty),*) => {
        $(impl Audited for $answer {
            fn warn(&mut self, warning: String) {
                self.audit_warning = Some(warning);
            }
        })*
    };
}

audited!(
    FileChanged,
    BranchCreated,
    PrOpened,
    PrMerged,
    PrClosed,
    PrCommented,
    BranchDeleted,
    CiRerun,
    CiDispatched
);
