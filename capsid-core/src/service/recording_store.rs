//! A store that refuses every call and records which port methods were asked: service tests of
//! the one check run against it, so a refusal that touched storage (read or write) is seen,
//! and a call that got through is counted. Successful paths are covered by the end-to-end
//! tests against the real stores.
//!
//! Its port impls are generated, not written here: every store port carries
//! `#[cfg_attr(test, capsid_refusing::refused)]`, which emits an impl whose every method
//! without a default body is [`RecordingStore::refuse`]. A method added to a port needs no
//! edit here.

use crate::ports::StoreError;

/// Answers every call with a refusal (see [`Refused`]), recording the method's name.
#[derive(Debug, Default)]
pub struct RecordingStore {
    touches: std::sync::Mutex<Vec<&'static str>>,
}

impl RecordingStore {
    /// Records that `method` was asked and answers its refusal: the body of every generated
    /// port method.
    pub fn refuse<R: Refused>(&self, method: &'static str) -> R {
        self.touches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(method);
        R::refused(StoreError::Backend(format!(
            "recording store: {method} is not wired in this test"
        )))
    }

    /// The methods asked so far, in order.
    pub fn touches(&self) -> Vec<&'static str> {
        self.touches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// What a refused method answers, by its return type. A port method returning a type not
/// listed here fails to compile under test until its refusal is chosen here.
pub trait Refused {
    /// The answer to a call refused with `error`.
    fn refused(error: StoreError) -> Self;
}

/// Any fallible call: the error (a [`StoreError`], or any error a store error converts into).
impl<T, E: From<StoreError>> Refused for Result<T, E> {
    fn refused(error: StoreError) -> Self {
        Err(error.into())
    }
}

/// An infallible lookup (`StoreHealth::newest_migration`): nothing known.
impl<T> Refused for Option<T> {
    fn refused(_: StoreError) -> Self {
        None
    }
}

/// An infallible listing (`StoreGauges::pool_usage`): nothing listed.
impl<T> Refused for Vec<T> {
    fn refused(_: StoreError) -> Self {
        Vec::new()
    }
}

/// A name (`BackupStore::engine`): the recording store's.
impl Refused for &'static str {
    fn refused(_: StoreError) -> Self {
        "recording"
    }
}
