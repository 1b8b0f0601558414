//! Capsid test support: the store conformance suite and end-to-end tests (issue "Storage").
