//! Bounded agent-initiated dispatch (the sister design's "Dynamic workflows"): the holder of a
//! claimed job may post a child job. The child's namespace is the parent's, never the
//! arguments'; its depth is the parent's plus one, refused past the namespace's depth bound
//! ([`MAX_DISPATCH_DEPTH`] unless its `dispatch_limits` setting says otherwise); and a parent
//! has at most as many children as its role may dispatch ([`DispatchLimits::children_of`]),
//! counted from the rows themselves (by the store, inside the insert's transaction), so a
//! cycle of dispatches terminates.

use std::collections::BTreeMap;

use super::role::{self, Role};
use super::{Job, JobStatus};
use crate::ports::Dispatch;

/// How deep a chain of dispatches may go (a job posted by a person is depth 0), unless the
/// namespace sets its own.
pub const MAX_DISPATCH_DEPTH: i64 = 3;
/// How many children one job without a role may dispatch, unless the namespace sets its own.
pub const MAX_DISPATCH_PER_JOB: i64 = 5;
/// The largest bound a namespace may set (depth or count): a chain or a fan-out beyond it is
/// a runaway, not a pipeline.
pub const DISPATCH_LIMIT_MAX: i64 = 50;

/// A namespace's dispatch bounds: how deep a chain may go, how many children a job without a
/// role may post, and how many a job of each role may (unset: the role's own count).
///
/// Stored as the runner setting `dispatch_limits`, text such as `depth=2,children=3,scout=1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchLimits {
    /// The deepest a chain may go.
    pub depth: i64,
    /// How many children a job without a role may dispatch.
    pub children: i64,
    /// How many children a job of a role may dispatch, where the namespace says.
    pub per_role: BTreeMap<String, i64>,
}

impl Default for DispatchLimits {
    fn default() -> Self {
        DispatchLimits {
            depth: MAX_DISPATCH_DEPTH,
            children: MAX_DISPATCH_PER_JOB,
            per_role: BTreeMap::new(),
        }
    }
}

impl DispatchLimits {
    /// Reads the setting's text (`depth=N`, `children=N`, `<role>=N`, comma separated; a key
    /// left out keeps its default), or the refusal naming the part that is wrong.
    pub fn parse(text: &str) -> Result<DispatchLimits, String> {
        const FIELD: &str = "dispatch_limits";
        let mut limits = DispatchLimits::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!(
                    "{FIELD}: {part:?} is not key=number (keys: depth, children, or a role: {})",
                    role::BUILT_IN.map(|r| r.name).join(", ")
                ));
            };
            let key = key.trim();
            let n = value
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|n| (0..=DISPATCH_LIMIT_MAX).contains(n))
                .ok_or_else(|| {
                    format!(
                        "{FIELD}: {key} must be a whole number from 0 to {DISPATCH_LIMIT_MAX}, not {:?}",
                        value.trim()
                    )
                })?;
            match key {
                "depth" => limits.depth = n,
                "children" => limits.children = n,
                name => {
                    let role = role::parse(FIELD, name)
                        .map_err(|why| format!("{why} (or depth, or children)"))?;
                    limits.per_role.insert(role.name.to_string(), n);
                }
            }
        }
        Ok(limits)
    }

    /// The stored form of a setting whose text [`parse`](Self::parse) accepted: every key the
    /// text named, in one order.
    pub fn to_setting(&self) -> String {
        let mut parts = vec![
            format!("depth={}", self.depth),
            format!("children={}", self.children),
        ];
        parts.extend(self.per_role.iter().map(|(r, n)| format!("{r}={n}")));
        parts.join(",")
    }

    /// How many children a job of `role` (or of none) may dispatch: the namespace's count for
    /// the role, else the role's own, else the namespace's count for jobs without a role.
    pub fn children_of(&self, role: Option<&Role>) -> i64 {
        match role {
            Some(r) => self.per_role.get(&*r.name).copied().unwrap_or(r.dispatches),
            None => self.children,
        }
    }
}

/// Who posts a child job: the holder of its claimed parent (an agent's dispatch), or the
/// server's pipeline handing a finished job's work on (a review, a deploy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poster<'a> {
    /// The actor holding the parent (`agent:<driver>`).
    Holder(&'a str),
    /// The pipeline ([`super::pipeline::PIPELINE_ACTOR`]): the parent need not be held (it
    /// is finished, or its pull request was approved).
    Pipeline,
}

/// Why a dispatch is refused: past one of the namespace's bounds (what the owner is shown on
/// the parent's trail), or not the poster's to make at all (bad input, recorded nowhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchRefusal {
    /// The refusal, naming the rule.
    pub why: String,
    /// Whether a bound (depth, a role's count) refused it.
    pub bound: bool,
}

impl std::fmt::Display for DispatchRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

fn not_allowed(why: String) -> DispatchRefusal {
    DispatchRefusal { why, bound: false }
}

fn past_bound(why: String) -> DispatchRefusal {
    DispatchRefusal { why, bound: true }
}

/// The child's parent link, or why `poster` may not dispatch from `parent` (whose role, as
/// the namespace defines it, is `role`) under the namespace's `limits`.
pub fn plan_dispatch(
    parent: &Job,
    role: Option<&Role>,
    poster: Poster<'_>,
    namespace_arg: Option<&str>,
    limits: &DispatchLimits,
) -> Result<Dispatch, DispatchRefusal> {
    let actor = match poster {
        Poster::Holder(actor) => actor,
        Poster::Pipeline => super::pipeline::PIPELINE_ACTOR,
    };
    if let Poster::Holder(actor) = poster
        && (parent.status != JobStatus::Claimed || parent.claimed_by.as_deref() != Some(actor))
    {
        return Err(not_allowed(format!(
            "only the holder of a claimed job may dispatch from it; {} is {}{}.",
            parent.id,
            parent.status,
            parent
                .claimed_by
                .as_deref()
                .map_or(String::new(), |h| format!(" and held by {h}"))
        )));
    }
    if let Some(ns) = namespace_arg
        && ns != parent.namespace
    {
        return Err(not_allowed(format!(
            "a dispatched job belongs to its parent's namespace ({}); namespace {ns} was given. Leave namespace out.",
            parent.namespace
        )));
    }
    let depth = parent.depth + 1;
    if depth > limits.depth {
        return Err(past_bound(format!(
            "{} is already {} dispatches deep; a chain of {} may go {} deep (its dispatch_limits setting), so this one stops here.",
            parent.id, parent.depth, parent.namespace, limits.depth
        )));
    }
    let max_children = limits.children_of(role);
    if max_children == 0 {
        return Err(past_bound(format!(
            "{} is a {} job, and a {} job dispatches nothing here (the namespace's dispatch_limits setting); post the work as a person.",
            parent.id,
            role.map_or("role-less", |r| &*r.name),
            role.map_or("role-less", |r| &*r.name),
        )));
    }
    Ok(Dispatch {
        parent_id: parent.id.clone(),
        requested_by: actor.to_owned(),
        depth,
        max_children,
    })
}

/// The refusal for a parent whose children (`max_children` of them) are used up.
pub fn too_many_children(parent_id: &str, max_children: i64) -> String {
    format!(
        "{parent_id} has already dispatched {max_children} jobs, the most it may (its role's count in the namespace's dispatch_limits setting); finish it, or post the rest as a person."
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
        let d = plan_dispatch(
            &held(0),
            None,
            Poster::Holder("agent:d"),
            None,
            &DispatchLimits::default(),
        )
        .expect("holder");
        assert_eq!(
            (d.depth, d.parent_id.as_str(), d.requested_by.as_str()),
            (1, "job_aaaaaaaaaaaa", "agent:d")
        );
        assert!(
            plan_dispatch(
                &held(0),
                None,
                Poster::Holder("agent:other"),
                None,
                &DispatchLimits::default()
            )
            .is_err()
        );
        assert!(
            plan_dispatch(
                &held(0),
                None,
                Poster::Holder("agent:d"),
                Some("elsewhere"),
                &DispatchLimits::default()
            )
            .is_err()
        );
        assert!(
            plan_dispatch(
                &held(0),
                None,
                Poster::Holder("agent:d"),
                Some("demo"),
                &DispatchLimits::default()
            )
            .is_ok()
        );
        let mut queued = held(0);
        queued.status = JobStatus::Queued;
        assert!(
            plan_dispatch(
                &queued,
                None,
                Poster::Holder("agent:d"),
                None,
                &DispatchLimits::default()
            )
            .is_err()
        );
        assert_eq!(
            plan_dispatch(
                &held(2),
                None,
                Poster::Holder("agent:d"),
                None,
                &DispatchLimits::default()
            )
            .map(|d| d.depth),
            Ok(3)
        );
        assert!(
            plan_dispatch(
                &held(3),
                None,
                Poster::Holder("agent:d"),
                None,
                &DispatchLimits::default()
            )
            .expect_err("depth 4")
            .why
            .contains("3 dispatches deep")
        );
    }

    #[test]
    fn limits_parse_normalise_and_name_what_is_wrong() {
        let l = DispatchLimits::parse(" scout=0 , depth=2,planner=4, children=1").expect("limits");
        assert_eq!((l.depth, l.children), (2, 1));
        assert_eq!(l.to_setting(), "depth=2,children=1,planner=4,scout=0");
        assert_eq!(DispatchLimits::parse(&l.to_setting()), Ok(l));
        assert_eq!(DispatchLimits::parse(""), Ok(DispatchLimits::default()));
        for (bad, names) in [
            ("depth", "\"depth\" is not key=number"),
            ("depth=-1", "depth must be a whole number from 0 to 50"),
            (
                "children=51",
                "children must be a whole number from 0 to 50",
            ),
            ("scout=two", "scout must be a whole number"),
            ("wizard=1", "\"wizard\" is not a role"),
        ] {
            let e = DispatchLimits::parse(bad).expect_err(bad);
            assert!(e.starts_with("dispatch_limits: "), "{bad}: {e}");
            assert!(e.contains(names), "{bad}: {e}");
        }
    }

    #[test]
    fn only_a_bound_refusal_is_marked_as_one() {
        let d = DispatchLimits::default();
        let refused = |job: &Job, poster, ns| plan_dispatch(job, None, poster, ns, &d).unwrap_err();
        assert!(!refused(&held(0), Poster::Holder("agent:other"), None).bound);
        assert!(!refused(&held(0), Poster::Holder("agent:d"), Some("elsewhere")).bound);
        let mut queued = held(0);
        queued.status = JobStatus::Queued;
        assert!(!refused(&queued, Poster::Holder("agent:d"), None).bound);
        assert!(refused(&held(3), Poster::Holder("agent:d"), None).bound);
        let deploy = role::parse("role", "deploy").expect("deploy");
        let refusal =
            plan_dispatch(&held(0), Some(deploy), Poster::Pipeline, None, &d).unwrap_err();
        assert!(refusal.bound);
        assert_eq!(
            refusal.to_string(),
            refusal.why,
            "a refusal reads as its reason"
        );
    }

    #[test]
    fn a_role_dispatches_its_own_count_unless_the_namespace_says() {
        let scout = role::parse("role", "scout").expect("scout");
        let deploy = role::parse("role", "deploy").expect("deploy");
        let d = DispatchLimits::default();
        assert_eq!(
            (
                d.children_of(None),
                d.children_of(Some(scout)),
                d.children_of(Some(deploy))
            ),
            (MAX_DISPATCH_PER_JOB, 1, 0)
        );
        let set = DispatchLimits::parse("children=2,scout=3").expect("limits");
        assert_eq!(
            (set.children_of(None), set.children_of(Some(scout))),
            (2, 3)
        );
        let mut job = held(0);
        job.role = Some("deploy".into());
        let e = plan_dispatch(&job, Some(deploy), Poster::Holder("agent:d"), None, &d)
            .expect_err("a deploy dispatches nothing");
        assert!(
            e.bound && e.why.contains("a deploy job dispatches nothing"),
            "{e}"
        );
        job.role = Some("scout".into());
        assert_eq!(
            plan_dispatch(&job, Some(scout), Poster::Holder("agent:d"), None, &d)
                .map(|p| p.max_children),
            Ok(1)
        );
        let shallow = DispatchLimits::parse("depth=1").expect("limits");
        let e = plan_dispatch(&held(1), None, Poster::Holder("agent:d"), None, &shallow)
            .expect_err("depth 2");
        assert!(e.bound && e.why.contains("may go 1 deep"), "{e}");
    }

    proptest! {
        #[test]
        fn a_chain_never_passes_the_bound(start in 0i64..10, bound in 0i64..=DISPATCH_LIMIT_MAX) {
            let limits = DispatchLimits { depth: bound, ..DispatchLimits::default() };
            let mut depth = start;
            let mut steps = 0;
            while let Ok(d) = plan_dispatch(&held(depth), None, Poster::Holder("agent:d"), None, &limits) {
                prop_assert!(d.depth <= bound);
                depth = d.depth;
                steps += 1;
                prop_assert!(steps <= bound);
            }
        }
    }
}
