//! Confirmation of destructive writes (reference 2.0): `confirm: true`, or a human asked
//! through the client (an MCP elicitation) when the client supports it. A confirmation given
//! by a human arms a stale-consent guard: the commit aborts if the body changed meanwhile.

use async_trait::async_trait;

use crate::docs::write::ConfirmationText;
use crate::error::{Error, Result};
use crate::time::SECOND_MS;

/// How long a human asked to confirm (an MCP elicitation) has to answer; past it the asking
/// failed, which counts as [`Consent::Unsupported`] (the call then says to pass
/// `confirm: true`).
pub const CONFIRM_WAIT_MS: i64 = 90 * SECOND_MS;

/// A human's answer to a confirmation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consent {
    /// The human accepted with `confirm: true`.
    Accepted,
    /// The human declined or cancelled.
    Declined,
    /// The client cannot ask (no elicitation capability, or asking failed).
    Unsupported,
}

/// The client's side of one call: asks the human behind it to confirm, tells it how far a
/// long call is, and says whether it cancelled the call.
#[async_trait]
pub trait Confirmer: Send + Sync {
    /// Asks `message`; an error while asking counts as [`Consent::Unsupported`].
    async fn confirm(&self, message: &str) -> Consent;

    /// Tells the client that a long call has done `done` of `total` (when known), in a short
    /// `message`. Heard only by a client that asked for progress (an MCP `progressToken`);
    /// `done` only grows. The default tells no one.
    async fn progress(&self, done: u64, total: Option<u64>, message: &str) {
        let _ = (done, total, message);
    }

    /// Whether the client cancelled the call (MCP `notifications/cancelled`): a long handler
    /// stops at its next safe point, having written nothing half-way. The default never is.
    fn cancelled(&self) -> bool {
        false
    }
}

/// A confirmer for callers that cannot be asked (stateless HTTP, the CLI, tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoConfirmer;

#[async_trait]
impl Confirmer for NoConfirmer {
    async fn confirm(&self, _message: &str) -> Consent {
        Consent::Unsupported
    }
}

/// How a destructive call was confirmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Confirmed {
    /// `confirm: true` was passed.
    ByFlag,
    /// A human accepted an elicitation: the commit must check the body did not change.
    ByHuman,
}

/// Proceeds on `confirm: true`; otherwise asks through `confirmer`. Declined and
/// unsupported become errors that say what to do.
pub(crate) async fn require_confirmation(
    confirm: Option<bool>,
    confirmer: &dyn Confirmer,
    text: ConfirmationText,
) -> Result<Confirmed> {
    if confirm == Some(true) {
        return Ok(Confirmed::ByFlag);
    }
    match confirmer.confirm(&text.prompt).await {
        Consent::Accepted => Ok(Confirmed::ByHuman),
        Consent::Declined => Err(Error::Declined(text.declined)),
        Consent::Unsupported => Err(Error::ConfirmationRequired(text.unsupported)),
    }
}
