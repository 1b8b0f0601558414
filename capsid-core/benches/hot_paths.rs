//! The core's per-call work, measured: the scope gate every tool call passes, a stored
//! scope's fail-closed parse, the path guard, assembling and normalising a write, and sealing
//! and verifying a job's signature. `cargo bench -p capsid-core --bench hot_paths`.

use std::hint::black_box;

use capsid_core::caller::{AgentKind, Caller};
use capsid_core::docs::{WriteInput, WriteMode, prepare_write};
use capsid_core::guards::protected_match;
use capsid_core::jobs::signature::{seal_task, verify_task};
use capsid_core::paths::doc_path_problem;
use capsid_core::scope::Scopes;
use capsid_core::service::registry::spec;
use capsid_core::tools::{Call, gate_call};
use criterion::{Criterion, criterion_group, criterion_main};

const STORED_SCOPES: &str = r#"{"namespaces":["alpha","beta"],"repos":["octo/alpha"],"grants":["read","write"],"tools":["read","write","search","jobs.claim","jobs.complete"],"flags":["can_merge"]}"#;

fn scopes(c: &mut Criterion) {
    let narrowed = Scopes::parse(Some(STORED_SCOPES));
    c.bench_function("scope/parse_stored", |b| {
        b.iter(|| Scopes::parse(black_box(Some(STORED_SCOPES))))
    });
    let caller = Caller::agent("agent_000000000001", "bench", AgentKind::Driver, narrowed);
    let Some(write) = spec("write") else {
        return;
    };
    let call = |ns| Call {
        namespace: Some(ns),
        takes_namespace: true,
        ..Call::default()
    };
    c.bench_function("scope/gate_call_allowed", |b| {
        b.iter(|| gate_call(&caller, black_box(write), &call("alpha")))
    });
    c.bench_function("scope/gate_call_refused", |b| {
        b.iter(|| gate_call(&caller, black_box(write), &call("gamma")))
    });
}

fn paths(c: &mut Criterion) {
    c.bench_function("paths/doc_path_problem", |b| {
        b.iter(|| doc_path_problem(black_box("decisions/2026/11/adopt-capsid-for-memory.md")))
    });
    c.bench_function("guards/protected_match", |b| {
        b.iter(|| protected_match(black_box("services/billing/src/charge.rs")))
    });
}

fn writes(c: &mut Criterion) {
    // A stored body is already normalized; the appended text brings a dash, so the whole
    // assembled body goes through normalization.
    let stored = "A paragraph of notes, with commas and words.\n".repeat(1_300);
    let input = WriteInput {
        title: Some("Notes \u{2014} week 48"),
        body: Some("One more line \u{2014} appended."),
        find: None,
        replace_with: None,
        doc_type: None,
        tags: None,
        status: None,
    };
    c.bench_function("write/prepare_append_60k", |b| {
        b.iter(|| {
            prepare_write(
                "alpha",
                "notes/week-48.md",
                WriteMode::Append,
                Some(black_box(stored.as_str())),
                &input,
                false,
            )
        })
    });
}

fn signatures(c: &mut Criterion) {
    let body = "Fix the flaky test in crates/store.\n".repeat(40);
    let sealed = seal_task("a-signing-secret-of-reasonable-length", &body);
    c.bench_function("jobs/seal_task", |b| {
        b.iter(|| seal_task("a-signing-secret-of-reasonable-length", black_box(&body)))
    });
    c.bench_function("jobs/verify_task", |b| {
        b.iter(|| verify_task("a-signing-secret-of-reasonable-length", black_box(&sealed)))
    });
}

criterion_group!(benches, scopes, paths, writes, signatures);
criterion_main!(benches);
