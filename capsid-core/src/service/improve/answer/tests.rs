//! Each answer's wire text is the JSON the untyped answers wrote: the same keys in the same
//! order, the same nulls and omissions (each expected value below is the former `json!`).

use serde_json::{Value, json};

use super::*;
use crate::service::schedule::{TaskOutcome, TaskRun};
use crate::skills::abstraction::SourceKind;

/// The wire text of `answer` as `improve_run` sends it.
fn wire(answer: impl Into<ImproveRunAnswer>) -> String {
    serde_json::to_string(&answer.into()).expect("serializes")
}

fn text(value: Value) -> String {
    value.to_string()
}

#[test]
fn the_loop_controls_answer_their_former_text() {
    assert_eq!(
        wire(ModeSet {
            ok: true,
            action: "mode",
            mode: "api",
            dry_run: false,
        }),
        text(json!({"ok": true, "action": "mode", "mode": "api", "dry_run": false}))
    );
    assert_eq!(
        wire(PauseSet {
            ok: true,
            action: "pause",
            namespaces: vec!["a".into(), "b".into()],
            dry_run: true,
        }),
        text(json!({"ok": true, "action": "pause", "namespaces": ["a", "b"], "dry_run": true}))
    );
    assert_eq!(
        wire(BudgetSet {
            ok: true,
            action: "budget",
            caps: BudgetCapsInForce {
                actions_minutes_month: 1000.0,
                model_usd_month: 12.5,
            },
            dry_run: false,
        }),
        text(json!({"ok": true, "action": "budget",
                    "caps": {"actions_minutes_month": 1000.0, "model_usd_month": 12.5},
                    "dry_run": false}))
    );
    assert_eq!(
        wire(OperatorKeyMinted {
            ok: true,
            action: "mint_operator_key",
            key: "capsid_ro_k".into(),
            hash: "h".into(),
            command: "add ro:h".into(),
            note: "once",
        }),
        text(
            json!({"ok": true, "action": "mint_operator_key", "key": "capsid_ro_k",
                    "hash": "h", "command": "add ro:h", "note": "once"})
        )
    );
    assert_eq!(
        wire(LeaseClaimed {
            ok: true,
            action: "claim",
            namespace: "a".into(),
            holder: "agent:x".into(),
            expires: "2026-12-05T00:00:00Z".into(),
        }),
        text(
            json!({"ok": true, "action": "claim", "namespace": "a", "holder": "agent:x",
                    "expires": "2026-12-05T00:00:00Z"})
        )
    );
    assert_eq!(
        wire(LeaseReleased {
            ok: true,
            action: "claim",
            namespace: "a".into(),
            released: true,
        }),
        text(json!({"ok": true, "action": "claim", "namespace": "a", "released": true}))
    );
    assert_eq!(
        wire(PolicySigned {
            ok: true,
            action: "sign_policy",
            namespace: "capsid",
            path: "policy/p.md".into(),
            signature: "s".into(),
            sha256: "d".into(),
            bytes: 7,
            resigned: false,
        }),
        text(
            json!({"ok": true, "action": "sign_policy", "namespace": "capsid",
                    "path": "policy/p.md", "signature": "s", "sha256": "d", "bytes": 7,
                    "resigned": false})
        )
    );
    assert_eq!(
        wire(refuse("claim", "claim needs a namespace")),
        text(json!({"ok": false, "action": "claim", "refusal": "claim needs a namespace"}))
    );
}

#[test]
fn run_and_attempt_answer_their_former_text() {
    let refused = || NamespaceRefused {
        namespace: "b".into(),
        reason: "paused".into(),
    };
    assert_eq!(
        wire(RunOpened {
            ok: true,
            action: "run",
            mode: "api",
            opened: vec![
                RunOpening::Opened(RunOpenedIn {
                    namespace: "a".into(),
                    run: "r1".into(),
                    status: "opening",
                    condition: "full".into(),
                    base_sha: None,
                }),
                RunOpening::WouldOpen(RunWouldOpen {
                    namespace: "c".into(),
                    would_open: true,
                }),
            ],
            refused: vec![refused()],
            dry_run: false,
            requested_by: "admin".into(),
        }),
        text(json!({"ok": true, "action": "run", "mode": "api",
                    "opened": [{"namespace": "a", "run": "r1", "status": "opening",
                                "condition": "full", "base_sha": null},
                               {"namespace": "c", "would_open": true}],
                    "refused": [{"namespace": "b", "reason": "paused"}], "dry_run": false,
                    "requested_by": "admin"}))
    );
    assert_eq!(
        wire(RunRefused {
            ok: false,
            action: "run",
            refusal: "paused".into(),
            refused: vec![refused()],
            dry_run: true,
        }),
        text(json!({"ok": false, "action": "run", "refusal": "paused",
                    "refused": [{"namespace": "b", "reason": "paused"}], "dry_run": true}))
    );
    assert_eq!(
        wire(AttemptReported {
            ok: true,
            action: "attempt",
            namespace: "a".into(),
            run: "r1".into(),
            attempt: "r1-1".into(),
            branch: "improve/r1-1".into(),
            status: None,
            did: "dispatched".into(),
        }),
        text(
            json!({"ok": true, "action": "attempt", "namespace": "a", "run": "r1",
                    "attempt": "r1-1", "branch": "improve/r1-1", "status": null,
                    "did": "dispatched"})
        )
    );
}

#[test]
fn roster_tick_cadence_and_pin_answer_their_former_text() {
    assert_eq!(
        wire(RosterListed {
            ok: true,
            action: "roster",
            op: "list",
            roster: vec!["a".into()],
            note: None,
        }),
        text(
            json!({"ok": true, "action": "roster", "op": "list", "roster": ["a"],
                    "note": null})
        )
    );
    assert_eq!(
        wire(RosterChanged {
            ok: true,
            action: "roster",
            op: "add",
            namespace: "a".into(),
            roster: vec!["a".into()],
            dry_run: false,
        }),
        text(
            json!({"ok": true, "action": "roster", "op": "add", "namespace": "a",
                    "roster": ["a"], "dry_run": false})
        )
    );
    let report = TickReport {
        at: "2026-12-05T00:00:00Z".into(),
        due: true,
        led: true,
        swept: 1,
        ci_resolved: 0,
        backed_up: false,
        ran: vec![TaskRun {
            task: "sweep",
            outcome: TaskOutcome::RanElsewhere,
            report: Value::Null,
            error: None,
        }],
    };
    assert_eq!(
        wire(TickAnswer {
            ok: true,
            action: "tick",
            task: None,
            report: report.clone(),
        }),
        text(json!({"ok": true, "action": "tick", "task": null,
                    "report": serde_json::to_value(&report).expect("serializes")}))
    );
    assert_eq!(
        wire(CadenceAnswer {
            ok: true,
            action: "cadence",
            task: "sweep",
            cadence_minutes: 5,
            default_minutes: 5,
            floor_minutes: 1,
            dry_run: false,
        }),
        text(
            json!({"ok": true, "action": "cadence", "task": "sweep", "cadence_minutes": 5,
                    "default_minutes": 5, "floor_minutes": 1, "dry_run": false})
        )
    );
    assert_eq!(
        wire(Pinned {
            ok: true,
            action: "pin",
            namespace: "a".into(),
            checksum: "c".into(),
            previous: None,
            unchanged: false,
            anchors: 2,
            on_roster: true,
            dry_run: false,
            note: None,
        }),
        text(
            json!({"ok": true, "action": "pin", "namespace": "a", "checksum": "c",
                    "previous": null, "unchanged": false, "anchors": 2, "on_roster": true,
                    "dry_run": false, "note": null})
        )
    );
    assert_eq!(
        wire(PinRefused {
            ok: false,
            action: "pin",
            namespace: "a".into(),
            refusal: "no scores".into(),
            problems: vec![],
        }),
        text(
            json!({"ok": false, "action": "pin", "namespace": "a", "refusal": "no scores",
                    "problems": []})
        )
    );
}

#[test]
fn the_skill_actions_answer_their_former_text() {
    let skill = || SkillListed {
        id: "s1".into(),
        title: "T".into(),
        status: "live".into(),
        version: 2,
        wins: 1,
        losses: 0,
        source_namespace: "a".into(),
        trigger: None,
        namespaces: Some(json!(["a"])),
        body_ref: "improve/skills/s1.md".into(),
    };
    let skill_text = json!({"id": "s1", "title": "T", "status": "live", "version": 2,
                            "wins": 1, "losses": 0, "source_namespace": "a", "trigger": null,
                            "namespaces": ["a"], "body_ref": "improve/skills/s1.md"});
    assert_eq!(
        wire(SkillList {
            ok: true,
            action: "skills",
            skills: vec![skill()],
            truncated: None,
        }),
        text(json!({"ok": true, "action": "skills", "skills": [skill_text.clone()]}))
    );
    assert_eq!(
        wire(SkillList {
            ok: true,
            action: "skills",
            skills: vec![],
            truncated: Some(true),
        }),
        text(json!({"ok": true, "action": "skills", "skills": [], "truncated": true}))
    );
    assert_eq!(
        wire(SkillEvidence {
            ok: true,
            action: "skill",
            skill: skill(),
            evaluations: vec![],
            edits: vec![],
            failures: vec![],
        }),
        text(json!({"ok": true, "action": "skill", "skill": skill_text,
                    "evaluations": [], "edits": [], "failures": []}))
    );
    let retired = |dry: bool| SkillRetired {
        ok: true,
        action: "retire_skill",
        dry_run: dry.then_some(true),
        skill: "s1".into(),
        from: "live".into(),
        status: (!dry).then_some("retired"),
    };
    assert_eq!(
        wire(retired(true)),
        text(
            json!({"ok": true, "action": "retire_skill", "dry_run": true, "skill": "s1",
                    "from": "live"})
        )
    );
    assert_eq!(
        wire(retired(false)),
        text(
            json!({"ok": true, "action": "retire_skill", "skill": "s1", "from": "live",
                    "status": "retired"})
        )
    );
    let accepted = |dry: bool| MergeAccepted {
        ok: true,
        action: "accept_merge",
        dry_run: dry.then_some(true),
        pair: "s1+s2".into(),
        kept: "s1".into(),
        retired: "s2".into(),
        status: (!dry).then_some("retired"),
    };
    assert_eq!(
        wire(accepted(true)),
        text(
            json!({"ok": true, "action": "accept_merge", "dry_run": true, "pair": "s1+s2",
                    "kept": "s1", "retired": "s2"})
        )
    );
    assert_eq!(
        wire(accepted(false)),
        text(
            json!({"ok": true, "action": "accept_merge", "pair": "s1+s2", "kept": "s1",
                    "retired": "s2", "status": "retired"})
        )
    );
    let rejected = |dry: bool| MergeRejected {
        ok: true,
        action: "reject_merge",
        dry_run: dry.then_some(true),
        pair: "s1+s2".into(),
        decision: (!dry).then_some("rejected"),
    };
    assert_eq!(
        wire(rejected(true)),
        text(json!({"ok": true, "action": "reject_merge", "dry_run": true, "pair": "s1+s2"}))
    );
    assert_eq!(
        wire(rejected(false)),
        text(
            json!({"ok": true, "action": "reject_merge", "pair": "s1+s2",
                    "decision": "rejected"})
        )
    );
}

#[test]
fn the_driver_s_proposals_answer_their_former_text() {
    assert_eq!(
        wire(SkillProposed {
            ok: true,
            action: "propose_skill",
            namespace: "a".into(),
            source_kind: SourceKind::Job,
            source_id: "j1".into(),
            skill: "s1".into(),
            status: "candidate",
            body_ref: "improve/skills/s1.md".into(),
        }),
        text(
            json!({"ok": true, "action": "propose_skill", "namespace": "a",
                    "source_kind": "job", "source_id": "j1", "skill": "s1",
                    "status": "candidate", "body_ref": "improve/skills/s1.md"})
        )
    );
    assert_eq!(
        wire(SourceDeclined {
            ok: true,
            action: "propose_skill",
            namespace: "a".into(),
            source_kind: SourceKind::Attempt,
            source_id: "r1-1".into(),
            declined: true,
        }),
        text(
            json!({"ok": true, "action": "propose_skill", "namespace": "a",
                    "source_kind": "attempt", "source_id": "r1-1", "declined": true})
        )
    );
    assert_eq!(
        wire(EditPending {
            ok: true,
            action: "propose_edit",
            skill: "s1".into(),
            pending: true,
            ops: 2,
            from_version: 3,
        }),
        text(
            json!({"ok": true, "action": "propose_edit", "skill": "s1", "pending": true,
                    "ops": 2, "from_version": 3})
        )
    );
    assert_eq!(
        wire(EditRejected {
            ok: false,
            action: "propose_edit",
            skill: "s1".into(),
            refusal: "rejected and recorded in skill_edits: x".into(),
        }),
        text(json!({"ok": false, "action": "propose_edit", "skill": "s1",
                    "refusal": "rejected and recorded in skill_edits: x"}))
    );
}

#[test]
fn the_output_schema_is_an_object_schema_with_a_branch_per_shape() {
    let output = crate::service::registry::output_schema("improve_run").expect("typed");
    assert!(!output.wrapped, "every improve_run answer is an object");
    let defs = output.schema["$defs"].as_object().expect("$defs");
    for shape in [
        "PinRefused",
        "RunRefused",
        "EditRejected",
        "TickAnswer",
        "SkillEvidence",
    ] {
        assert!(defs.contains_key(shape), "{shape}: {:?}", defs.keys());
    }
}
