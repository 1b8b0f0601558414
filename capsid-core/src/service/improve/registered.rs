//! The improve tools as the registry serves them.
use super::*;
use crate::service::Areas;
use crate::service::registry::{Tool, ToolFuture};
use crate::tools::{Requirement, Requirement::Fixed, Rule, ToolGroup, ToolSpec, action};

/// `improve_run`.
#[derive(Debug)]
pub struct ImproveRun;
impl Tool for ImproveRun {
    type Args = RunArgs;
    type Answer = ImproveRunAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "improve_run",
        ToolGroup::Improve,
        Requirement::PerAction {
            default: "run",
            actions: &[
                action("run", Rule::write()),
                action("attempt", Rule::write()),
                action(
                    "mode",
                    Rule::write().global("the loop's mode runs or stops it in every namespace"),
                ),
                action("pause", Rule::write()),
                action(
                    "unpause",
                    Rule::write().global(
                        "lifting a pause overrides the owner's or the loop's decision to stop a namespace",
                    ),
                ),
                action(
                    "budget",
                    Rule::write().global("the monthly caps are every namespace's to spend"),
                ),
                action(
                    "mint_operator_key",
                    Rule::write().admin_only("minting an operator key is admin only"),
                ),
                action("claim", Rule::write()),
                action(
                    "sign_policy",
                    Rule::write().admin_only(
                        "signing a policy is admin only: a minted agent that could sign could authorize itself",
                    ),
                ),
                action(
                    "roster",
                    Rule::write().admin_only(
                        "the roster decides which namespaces' repositories autonomy reaches: admin only",
                    ),
                ),
                action(
                    "tick",
                    Rule::write().admin_only(
                        "running the periodic tasks on demand (auto-merge among them) is admin only",
                    ),
                ),
                action(
                    "cadence",
                    Rule::write().admin_only("a periodic task's cadence is admin only"),
                ),
                action(
                    "pin",
                    Rule::write().admin_only(
                        "pinning the Anchors is a human setting the loop's floor: admin only",
                    ),
                ),
                // Write like the rest of improve_run (reference 2.5: a write tool), so a
                // read-only agent's tools/list is unchanged.
                action("skills", Rule::write()),
                action("skill", Rule::write()),
                action(
                    "retire_skill",
                    Rule::write().admin_only(
                        "retiring a skill by hand overrides its evidence: admin only",
                    ),
                ),
                action(
                    "accept_merge",
                    Rule::write().admin_only(
                        "merging skills is a human's decision on a proposal: admin only",
                    ),
                ),
                action(
                    "reject_merge",
                    Rule::write().admin_only(
                        "merging skills is a human's decision on a proposal: admin only",
                    ),
                ),
                action("propose_skill", Rule::write()),
                action("propose_edit", Rule::write()),
                // The namespace's write scope, like its other writes: the copy goes to the
                // repository only as a pull request, and a copy read back only as a candidate.
                action("export_skills", Rule::write()),
                action("import_skills", Rule::write()),
            ],
        },
        "Control the self-improvement loop: run (open tonight's run now), attempt (the subscription driver reports its pushed attempt), mode, pause, unpause, budget, claim, mint_operator_key, sign_policy, roster (add/remove/list), tick (the periodic tasks now), cadence (a task's minutes), pin (a namespace's Anchors checksum), skills (list), skill (one with its evidence), retire_skill, accept_merge and reject_merge (settle a merge proposal of improve_status), propose_skill (the subscription driver proposes a skill from a kept attempt or a verified job), propose_edit (the subscription driver's bounded skill edit), export_skills (the namespace's live skills to its repository as skills/<id>/SKILL.md, through a pull request), import_skills (each repository copy that differs from its skill becomes a candidate).",
    )
    .open_world()
    .ok_false_refusals()
    .titled("Self-improvement loop controls");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: RunArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.improve().improve_run(c, a, k).await })
    }
}

/// `improve_status`.
#[derive(Debug)]
pub struct ImproveStatus;
impl Tool for ImproveStatus {
    type Args = StatusArgs;
    type Answer = StatusAnswer;
    const SPEC: ToolSpec = ToolSpec::new(
        "improve_status",
        ToolGroup::Improve,
        Fixed(Rule::read()),
        "Queue, agents and loop status per namespace.",
    )
    .titled("Self-improvement and autonomy status");
    fn run<'a>(
        s: Areas<'a>,
        c: &'a Caller,
        a: StatusArgs,
        k: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer> {
        Box::pin(async move { s.improve().status_answer(c, a, k).await })
    }
}
