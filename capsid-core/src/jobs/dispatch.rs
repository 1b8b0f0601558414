//! Bounded agent-initiated dispatch (the sister design's "Dynamic workflows"): the holder of a
//! claimed job may post a child job. The child's namespace is the parent's, never the
//! arguments'; its depth is the parent's plus one, refused past [`MAX_DISPATCH_DEPTH`]; and
//! a parent has at most [`MAX_DISPATCH_PER_JOB`] children, counted from the rows themselves
//! (by the store, inside the insert's transaction), so a cycle of dispatches terminates.

use super::{Job, JobStatus};
use crate::ports::Dispatch;

/// How deep a chain of dispatches may go (a job posted by a person is depth 0).
pub const MAX_DISPATCH_DEPTH: i64 = 3;
/// How many children one job may dispatch.
pub const MAX_DISPATCH_PER_JOB: i64 = 5;

/// The child's parent link, or why the holder may not dispatch from `parent`.
pub fn plan_dispatch(
    parent: &Job,
    actor: &str,
    namespace_arg: Option<&str>,
) -> Result<Dispatch, String> {
    if parent.status != JobStatus::Claimed || parent.claimed_by.as_deref() != Some(actor) {
        return Err(format!(
            "only the holder of a claimed job may dispatch from it; {} is {}{}.",
            parent.id,
            parent.status,
            parent
                .claimed_by
                .as_deref()
                .map_or(String::new(), |h| format!(" and held by {h}"))
        ));
    }
    if let Some(ns) = namespace_arg
        && ns != parent.namespace
    {
        return Err(format!(
            "a dispatched job belongs to its parent's namespace ({}); namespace {ns} was given. Leave namespace out.",
            parent.namespace
        ));
    }
    let depth = parent.depth + 1;
    if depth > MAX_DISPATCH_DEPTH {
        return Err(format!(
            "{} is already {} dispatches deep; a chain may go {MAX_DISPATCH_DEPTH} deep, so this one stops here.",
            parent.id, parent.depth
        ));
    }
    Ok(Dispatch {
        parent_id: parent.id.clone(),
        requested_by: actor.to_owned(),
        depth,
        max_children: MAX_DISPATCH_PER_JOB,
    })
}

/// The refusal for a parent whose children are used up.
pub fn too_many_children(parent_id: &str) -> String {
    format!(
        "{parent_id} has already dispatched {MAX_DISPATCH_PER_JOB} jobs, the most one job may; finish it, or post the rest as a person."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn held(depth: i64) -> Job {
        let mut j: Job = serde_json::from_value(serde_json::json!({
            "id": "job_aaaaaaaaaaaa", "namespace": "demo", "title": "t", "body": "b", "priority": 0,
            "status": "claimed", "posted_by": "github:o", "claimed_by": "agent:d",
            "claimed_at": null, "lease_expires": null, "result_ref": null, "result_summary": null,
            "gate_required": 0, "review_required": 0, "blocked_count": 0, "resumed_count": 0,
            "corrections_count": 0, "required_scopes": null, "min_record": null,
            "created_at": "2026-01-01T00:00:00.000Z", "updated_at": "2026-01-01T00:00:00.000Z"
        }))
        .expect("a job");
        j.depth = depth;
        j
    }

    #[test]
    fn only_the_holder_in_the_parents_namespace_within_the_depth() {
        let d = plan_dispatch(&held(0), "agent:d", None).expect("holder");
        assert_eq!(
            (d.depth, d.parent_id.as_str(), d.requested_by.as_str()),
            (1, "job_aaaaaaaaaaaa", "agent:d")
        );
        assert!(plan_dispatch(&held(0), "agent:other", None).is_err());
        assert!(plan_dispatch(&held(0), "agent:d", Some("elsewhere")).is_err());
        assert!(plan_dispatch(&held(0), "agent:d", Some("demo")).is_ok());
        let mut queued = held(0);
        queued.status = JobStatus::Queued;
        assert!(plan_dispatch(&queued, "agent:d", None).is_err());
        assert_eq!(
            plan_dispatch(&held(2), "agent:d", None).map(|d| d.depth),
            Ok(3)
        );
        assert!(
            plan_dispatch(&held(3), "agent:d", None)
                .expect_err("depth 4")
                .contains("3 dispatches deep")
        );
    }

    proptest! {
        #[test]
        fn a_chain_never_passes_the_bound(start in 0i64..10) {
            let mut depth = start;
            let mut steps = 0;
            while let Ok(d) = plan_dispatch(&held(depth), "agent:d", None) {
                prop_assert!(d.depth <= MAX_DISPATCH_DEPTH);
                depth = d.depth;
                steps += 1;
                prop_assert!(steps <= MAX_DISPATCH_DEPTH);
            }
        }
    }
}
