//! What a checkpoint may say, and when an answer or a resume is accepted.
//!
//! A checkpoint is the agent's own account, so its claims are held to the gates: `done` only
//! with a passing test run (or `skipped`, which a clean tree with nothing shipped may claim,
//! as a scout does); an agent waiting on a human says what it needs (`question`), and only
//! such an agent asks one. An answer fills exactly the entry that asked, once; a resume of an
//! agent paused on a question carries its answer, so it needs one. An entry written for its
//! namespace may be promoted to `global` later, once.

use super::state::{CheckmarkEvent, IllegalTransition, Step, step};
use super::status::{AgentStatus, GateStatus, Visibility};
use super::{COST_USD_MAX, NEXT_STEPS_MAX};
use crate::time::Timestamp;

/// What a checkpoint claims, as its rules read it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckpointClaims<'a> {
    /// The status it records.
    pub status: AgentStatus,
    /// Its question, if any.
    pub question: Option<&'a str>,
    /// What the test run said.
    pub tests_status: GateStatus,
    /// Whether the working tree is clean (nothing changed).
    pub clean_tree: bool,
    /// The commit it pushed, if any.
    pub push_sha: Option<&'a str>,
    /// What comes next.
    pub next_steps: &'a [String],
    /// What the session cost, if reported.
    pub cost_usd: Option<f64>,
}

/// Why a checkpoint was refused; each names the field and the rule. Nothing is written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CheckpointRefusal {
    /// `done` without a passing test run.
    #[error(
        "status: done needs tests_status pass (or skipped, for a clean tree with nothing pushed); this checkpoint says tests_status {tests}"
    )]
    DoneWithoutPassingTests {
        /// What it said.
        tests: GateStatus,
    },
    /// `skipped` claimed for a tree that changed or shipped something.
    #[error(
        "tests_status: skipped is only for a clean tree with nothing shipped; pass clean_tree: true and no push_sha"
    )]
    SkippedNeedsCleanTree,
    /// An agent waiting on a human did not say what it needs.
    #[error("question: status {status} needs a question saying what the agent needs from a human")]
    QuestionNeeded {
        /// The status.
        status: AgentStatus,
    },
    /// A question from an agent that does not wait for its answer.
    #[error(
        "question: only a paused_for_input or blocked checkpoint asks a question; this one is {status}"
    )]
    QuestionNotAllowed {
        /// The status.
        status: AgentStatus,
    },
    /// A push that does not name a commit.
    #[error("push_sha: must be 7 to 64 hexadecimal characters (a commit sha)")]
    BadPushSha,
    /// A blank next step.
    #[error("next_steps: step {index} is empty; every step is a non-empty string")]
    EmptyStep {
        /// Its position, from 0.
        index: usize,
    },
    /// Too many next steps.
    #[error("next_steps: at most {NEXT_STEPS_MAX} steps; this checkpoint lists {count}")]
    TooManySteps {
        /// How many it listed.
        count: usize,
    },
    /// A cost that is not a sum of money.
    #[error("cost_usd: must be a finite number from 0 to {COST_USD_MAX}")]
    BadCost,
}

fn is_commit_sha(sha: &str) -> bool {
    (7..=64).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

fn blank(text: Option<&str>) -> bool {
    text.is_none_or(|t| t.trim().is_empty())
}

/// Checks a checkpoint's claims, in a fixed order: next steps, the push, the cost, the
/// question, then the test gate.
pub fn check_checkpoint(c: &CheckpointClaims<'_>) -> Result<(), CheckpointRefusal> {
    if c.next_steps.len() > NEXT_STEPS_MAX {
        return Err(CheckpointRefusal::TooManySteps {
            count: c.next_steps.len(),
        });
    }
    if let Some(index) = c.next_steps.iter().position(|s| s.trim().is_empty()) {
        return Err(CheckpointRefusal::EmptyStep { index });
    }
    if c.push_sha.is_some_and(|sha| !is_commit_sha(sha)) {
        return Err(CheckpointRefusal::BadPushSha);
    }
    if c.cost_usd
        .is_some_and(|usd| !usd.is_finite() || !(0.0..=COST_USD_MAX).contains(&usd))
    {
        return Err(CheckpointRefusal::BadCost);
    }
    match (c.status.waits_on_a_human(), blank(c.question)) {
        (true, true) => return Err(CheckpointRefusal::QuestionNeeded { status: c.status }),
        (false, false) => return Err(CheckpointRefusal::QuestionNotAllowed { status: c.status }),
        _ => {}
    }
    let clean_and_unshipped = c.clean_tree && c.push_sha.is_none();
    if c.tests_status == GateStatus::Skipped && !clean_and_unshipped {
        return Err(CheckpointRefusal::SkippedNeedsCleanTree);
    }
    if c.status == AgentStatus::Done
        && !matches!(c.tests_status, GateStatus::Pass | GateStatus::Skipped)
    {
        return Err(CheckpointRefusal::DoneWithoutPassingTests {
            tests: c.tests_status,
        });
    }
    Ok(())
}

/// Who answered an entry, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered<'a> {
    /// The answering actor.
    pub by: &'a str,
    /// When (`None`: an answer stored without its time).
    pub at: Option<Timestamp>,
}

/// What an answer or a resume reads of a checkmark: its status and the entry it links to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting<'a> {
    /// The checkmark's status.
    pub status: AgentStatus,
    /// The linked entry's question.
    pub question: Option<&'a str>,
    /// The linked entry's answer, once given.
    pub answered: Option<Answered<'a>>,
}

/// Why an answer or a resume was refused. Nothing is written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefusal {
    /// The table does not allow it from the checkmark's status.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// The entry the checkmark links to asked nothing.
    #[error("the agent's latest entry asked no question; there is nothing to answer")]
    NoQuestion,
    /// The entry was answered already.
    #[error("the question was already answered by {by} at {at}; an answer is given once")]
    AlreadyAnswered {
        /// Who answered.
        by: String,
        /// When.
        at: String,
    },
    /// A resume of an agent paused on a question that nobody answered.
    #[error("answer the question first: a resume carries the answer to the agent")]
    Unanswered,
}

/// Whether a checkmark waits for a person's answer: its agent waits on a human, it asked a
/// question, and nobody has answered the entry it links to (the console's Answer forms, the
/// questions `/metrics` counts).
pub fn waits_for_answer(status: AgentStatus, asked: bool, answered: bool) -> bool {
    status.waits_on_a_human() && asked && !answered
}

/// The step an answer takes (`resume`: answer and resume), or why it is refused: the agent must
/// wait on a human, its entry must have asked, and nobody may have answered yet.
pub fn answer_step(w: &Waiting<'_>, resume: bool) -> Result<Step, AnswerRefusal> {
    let event = if resume {
        CheckmarkEvent::AnswerAndResume
    } else {
        CheckmarkEvent::Answer
    };
    let step = step(w.status, event)?;
    if blank(w.question) {
        return Err(AnswerRefusal::NoQuestion);
    }
    if let Some(a) = w.answered {
        return Err(AnswerRefusal::AlreadyAnswered {
            by: a.by.to_owned(),
            at: a
                .at
                .map_or_else(|| "an unrecorded time".to_owned(), |t| t.to_string()),
        });
    }
    Ok(step)
}

/// The step a resume takes, or why it is refused: the agent must wait on a human, and one paused
/// on a question needs its answer first (a blocked agent resumes once the human acted).
pub fn resume_step(w: &Waiting<'_>) -> Result<Step, AnswerRefusal> {
    let step = step(w.status, CheckmarkEvent::Resume)?;
    if w.status == AgentStatus::PausedForInput && w.answered.is_none() {
        return Err(AnswerRefusal::Unanswered);
    }
    Ok(step)
}

/// Why a caller may not act on a checkmark or name a job: the authority is someone else's.
/// Nothing is written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityRefusal {
    /// The asking agent answering (or resuming) its own question.
    #[error(
        "{agent}'s open question is answered by someone else: a person (the console, the admin, the Handler API with another key) or another agent, never {agent}'s own key"
    )]
    OwnQuestion {
        /// The asking agent.
        agent: String,
    },
    /// A checkpoint naming a job the caller does not hold.
    #[error(
        "job_id: {job} is held by {holder}; a checkpoint may name only a job its writer holds (claimed_by {caller}), or any job when the admin writes it"
    )]
    JobNotHeld {
        /// The job named.
        job: String,
        /// Its `claimed_by`, or `nobody`.
        holder: String,
        /// The caller's actor.
        caller: String,
    },
}

/// Whether the caller whose actor string is `caller_actor` may answer (or resume) the open
/// question of `asking_agent`: anyone the one check let through (a person, the admin, another
/// agent) but the asking agent itself, whose answer to its own question would let it pass its
/// human gate alone. The one place this rule lives; a caller acting for the asking agent (a
/// credential bound to it) is refused here too.
pub fn may_answer(caller_actor: &str, asking_agent: &str) -> Result<(), AuthorityRefusal> {
    match caller_actor.strip_prefix("agent:") {
        Some(name) if name == asking_agent => Err(AuthorityRefusal::OwnQuestion {
            agent: asking_agent.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Whether a checkpoint written by `caller_actor` (the admin when `admin`) may name `job`,
/// whose `claimed_by` is `holder`: the admin names any job; anybody else only a job it holds,
/// whatever the job's status (the driver checkpoints its claimed and blocked jobs, and once
/// more after it closed one `done` or `failed`, which keeps the holder).
pub fn may_name_job(
    caller_actor: &str,
    admin: bool,
    job: &str,
    holder: Option<&str>,
) -> Result<(), AuthorityRefusal> {
    if admin || holder == Some(caller_actor) {
        return Ok(());
    }
    Err(AuthorityRefusal::JobNotHeld {
        job: job.to_owned(),
        holder: holder.unwrap_or("nobody").to_owned(),
        caller: caller_actor.to_owned(),
    })
}

/// Why a log entry cannot be promoted to `global`. Nothing is written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PromoteRefusal {
    /// It is global already (written so, or promoted before).
    #[error(
        "log entry {entry} is already global: every namespace's feed shows it; nothing to promote"
    )]
    AlreadyGlobal {
        /// The entry.
        entry: i64,
    },
}

/// The visibility an entry takes when promoted, from the one it has: a `project` entry turns
/// `global` (the sister design's "a checkpoint that genuinely matters", chosen after the
/// fact); a `global` one is refused. Who may promote is the one check's (`checkmarks`
/// action `promote` needs `can_write_shared`, which the admin holds), not this rule's.
pub fn promote(entry: i64, from: Visibility) -> Result<Visibility, PromoteRefusal> {
    match from {
        Visibility::Project => Ok(Visibility::Global),
        Visibility::Global => Err(PromoteRefusal::AlreadyGlobal { entry }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn only_a_project_entry_is_promoted_and_it_turns_global() {
        assert_eq!(promote(7, Visibility::Project), Ok(Visibility::Global));
        let refused = promote(7, Visibility::Global).unwrap_err();
        assert_eq!(refused, PromoteRefusal::AlreadyGlobal { entry: 7 });
        assert!(
            refused
                .to_string()
                .contains("log entry 7 is already global")
        );
        for v in Visibility::ALL {
            // Promoting never leaves an entry project-only, and never changes a global one.
            if let Ok(to) = promote(1, *v) {
                assert_eq!(to, Visibility::Global);
                assert_ne!(*v, Visibility::Global);
            }
        }
    }

    use AgentStatus as S;
    use GateStatus as G;

    #[test]
    fn the_asking_agent_never_answers_its_own_question() {
        assert_eq!(
            may_answer("agent:d1", "d1"),
            Err(AuthorityRefusal::OwnQuestion { agent: "d1".into() })
        );
        let why = may_answer("agent:d1", "d1").unwrap_err().to_string();
        assert!(
            why.contains("d1's open question") && why.contains("someone else"),
            "{why}"
        );
        for other in [
            "agent:d2",
            "agent:d10",
            "agent:",
            "github:d1",
            "cli:d1",
            "opkey:d1",
            "d1",
            "watcher",
        ] {
            assert_eq!(may_answer(other, "d1"), Ok(()), "{other}");
        }
        assert!(
            may_answer("agent:d1", "d10").is_ok(),
            "a prefix is another agent"
        );
    }

    #[test]
    fn a_checkpoint_names_only_a_job_its_writer_holds() {
        assert_eq!(
            may_name_job("agent:d1", false, "job_1", Some("agent:d1")),
            Ok(())
        );
        assert_eq!(
            may_name_job("github:o", true, "job_1", Some("agent:d2")),
            Ok(())
        );
        assert_eq!(may_name_job("github:o", true, "job_1", None), Ok(()));
        let err = may_name_job("agent:d1", false, "job_1", Some("agent:d2")).unwrap_err();
        assert_eq!(
            err,
            AuthorityRefusal::JobNotHeld {
                job: "job_1".into(),
                holder: "agent:d2".into(),
                caller: "agent:d1".into()
            }
        );
        let why = err.to_string();
        assert!(
            why.starts_with("job_id: job_1 is held by agent:d2"),
            "{why}"
        );
        let unheld = may_name_job("agent:d1", false, "job_2", None).unwrap_err();
        assert!(unheld.to_string().contains("held by nobody"), "{unheld}");
        assert!(may_name_job("agent:d1", false, "job_1", Some("agent:d10")).is_err());
    }

    fn claims(
        status: AgentStatus,
        question: Option<&str>,
        tests: GateStatus,
    ) -> CheckpointClaims<'_> {
        CheckpointClaims {
            status,
            question,
            tests_status: tests,
            clean_tree: false,
            push_sha: None,
            next_steps: &[],
            cost_usd: None,
        }
    }

    #[test]
    fn done_needs_a_passing_test_run_or_a_clean_skip() {
        assert!(check_checkpoint(&claims(S::Done, None, G::Pass)).is_ok());
        for tests in [G::Fail, G::Unknown] {
            let err = check_checkpoint(&claims(S::Done, None, tests)).unwrap_err();
            assert_eq!(err, CheckpointRefusal::DoneWithoutPassingTests { tests });
            assert!(
                err.to_string()
                    .starts_with("status: done needs tests_status pass")
            );
        }
        let skipped = claims(S::Done, None, G::Skipped);
        assert_eq!(
            check_checkpoint(&skipped),
            Err(CheckpointRefusal::SkippedNeedsCleanTree)
        );
        let scout = CheckpointClaims {
            clean_tree: true,
            ..skipped
        };
        assert!(check_checkpoint(&scout).is_ok(), "a scout on a clean tree");
        let shipped = CheckpointClaims {
            push_sha: Some("0123abc"),
            ..scout
        };
        assert_eq!(
            check_checkpoint(&shipped),
            Err(CheckpointRefusal::SkippedNeedsCleanTree),
            "something shipped: the gate cannot be skipped"
        );
    }

    #[test]
    fn only_an_unanswered_question_of_a_waiting_agent_waits_for_a_person() {
        assert!(waits_for_answer(S::PausedForInput, true, false));
        assert!(waits_for_answer(S::Blocked, true, false));
        assert!(!waits_for_answer(S::PausedForInput, true, true), "answered");
        assert!(!waits_for_answer(S::Blocked, false, false), "asked nothing");
        assert!(!waits_for_answer(S::Working, true, false), "not waiting");
        assert!(!waits_for_answer(S::Done, true, false), "not waiting");
    }

    #[test]
    fn waiting_agents_ask_and_only_they_do() {
        for status in [S::PausedForInput, S::Blocked] {
            assert_eq!(
                check_checkpoint(&claims(status, Some("  "), G::Unknown)),
                Err(CheckpointRefusal::QuestionNeeded { status })
            );
            assert!(check_checkpoint(&claims(status, Some("which db?"), G::Unknown)).is_ok());
        }
        for status in [S::Working, S::Done] {
            assert_eq!(
                check_checkpoint(&claims(status, Some("why?"), G::Pass)),
                Err(CheckpointRefusal::QuestionNotAllowed { status })
            );
        }
    }

    #[test]
    fn steps_pushes_and_costs_are_checked_naming_the_field() {
        let long: Vec<String> = (0..51).map(|i| format!("step {i}")).collect();
        let c = CheckpointClaims {
            next_steps: &long,
            ..claims(S::Working, None, G::Unknown)
        };
        assert!(
            check_checkpoint(&c)
                .unwrap_err()
                .to_string()
                .starts_with("next_steps:")
        );
        let blank = vec!["ok".to_owned(), " ".to_owned()];
        let c = CheckpointClaims {
            next_steps: &blank,
            ..claims(S::Working, None, G::Unknown)
        };
        assert_eq!(
            check_checkpoint(&c),
            Err(CheckpointRefusal::EmptyStep { index: 1 })
        );
        for sha in ["abc", "zzzzzzz", &"a".repeat(65)] {
            let c = CheckpointClaims {
                push_sha: Some(sha),
                ..claims(S::Working, None, G::Unknown)
            };
            assert_eq!(
                check_checkpoint(&c),
                Err(CheckpointRefusal::BadPushSha),
                "{sha}"
            );
        }
        for usd in [-0.01, f64::NAN, f64::INFINITY, 2e6] {
            let c = CheckpointClaims {
                cost_usd: Some(usd),
                ..claims(S::Working, None, G::Unknown)
            };
            assert_eq!(
                check_checkpoint(&c),
                Err(CheckpointRefusal::BadCost),
                "{usd}"
            );
        }
    }

    #[test]
    fn an_answer_fills_the_asking_entry_once() {
        let asked = Waiting {
            status: S::PausedForInput,
            question: Some("which db?"),
            answered: None,
        };
        assert_eq!(answer_step(&asked, false).unwrap().to, S::PausedForInput);
        assert_eq!(answer_step(&asked, true).unwrap().to, S::Working);
        let again = Waiting {
            answered: Some(Answered {
                by: "github:octo",
                at: Timestamp::parse("2026-03-01T09:00:00.000Z"),
            }),
            ..asked
        };
        let err = answer_step(&again, false).unwrap_err();
        assert!(err.to_string().contains("github:octo"), "{err}");
        let silent = Waiting {
            question: None,
            ..asked
        };
        assert_eq!(answer_step(&silent, false), Err(AnswerRefusal::NoQuestion));
        let working = Waiting {
            status: S::Working,
            ..asked
        };
        assert!(matches!(
            answer_step(&working, false),
            Err(AnswerRefusal::Illegal(_))
        ));
        assert_eq!(resume_step(&asked), Err(AnswerRefusal::Unanswered));
        assert_eq!(resume_step(&again).unwrap().to, S::Working);
        let blocked = Waiting {
            status: S::Blocked,
            ..asked
        };
        assert_eq!(
            resume_step(&blocked).unwrap().to,
            S::Working,
            "the human acted"
        );
    }

    /// One thing that can happen to a checkmark, as the property drives it.
    #[derive(Clone, Debug)]
    enum Op {
        Checkpoint {
            status: AgentStatus,
            asks: bool,
            tests: GateStatus,
            clean: bool,
            pushed: bool,
        },
        Answer {
            resume: bool,
        },
        Resume,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (
                proptest::sample::select(S::ALL.to_vec()),
                any::<bool>(),
                proptest::sample::select(G::ALL.to_vec()),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(status, asks, tests, clean, pushed)| Op::Checkpoint {
                    status,
                    asks,
                    tests,
                    clean,
                    pushed
                }),
            any::<bool>().prop_map(|resume| Op::Answer { resume }),
            Just(Op::Resume),
        ]
    }

    /// A checkmark and the entry it links to, as the model and the rules see it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Mark {
        status: AgentStatus,
        question: Option<String>,
        answered: bool,
        resume_requested: bool,
    }

    /// The model, stated from the rules' prose and nothing else.
    fn model(mark: &Option<Mark>, op: &Op) -> Option<Mark> {
        match op {
            Op::Checkpoint {
                status,
                asks,
                tests,
                clean,
                pushed,
            } => {
                let waits = matches!(status, S::PausedForInput | S::Blocked);
                let clean_skip = *clean && !pushed;
                let ok = *asks == waits
                    && (*tests != G::Skipped || clean_skip)
                    && (*status != S::Done || *tests == G::Pass || *tests == G::Skipped);
                ok.then(|| Mark {
                    status: *status,
                    question: asks.then(|| "what now?".to_owned()),
                    answered: false,
                    resume_requested: false,
                })
            }
            Op::Answer { resume } => {
                let m = mark.as_ref()?;
                let waits = matches!(m.status, S::PausedForInput | S::Blocked);
                (waits && m.question.is_some() && !m.answered).then(|| Mark {
                    status: if *resume { S::Working } else { m.status },
                    answered: true,
                    resume_requested: m.resume_requested || *resume,
                    ..m.clone()
                })
            }
            Op::Resume => {
                let m = mark.as_ref()?;
                let ok = m.status == S::Blocked || (m.status == S::PausedForInput && m.answered);
                ok.then(|| Mark {
                    status: S::Working,
                    resume_requested: true,
                    ..m.clone()
                })
            }
        }
    }

    /// The rules, applied as the service and the store apply them.
    fn rules(mark: &Option<Mark>, op: &Op) -> Option<Mark> {
        fn waiting(m: &Mark) -> Waiting<'_> {
            Waiting {
                status: m.status,
                question: m.question.as_deref(),
                answered: m.answered.then_some(Answered {
                    by: "agent:other",
                    at: None,
                }),
            }
        }
        match op {
            Op::Checkpoint {
                status,
                asks,
                tests,
                clean,
                pushed,
            } => {
                let question = asks.then(|| "what now?".to_owned());
                let c = CheckpointClaims {
                    status: *status,
                    question: question.as_deref(),
                    tests_status: *tests,
                    clean_tree: *clean,
                    push_sha: pushed.then_some("0123456789abcdef"),
                    next_steps: &[],
                    cost_usd: None,
                };
                check_checkpoint(&c).ok()?;
                let to = crate::checkmarks::transition(
                    mark.as_ref().map(|m| m.status),
                    CheckmarkEvent::Checkpoint(*status),
                )
                .ok()?;
                Some(Mark {
                    status: to,
                    question,
                    answered: false,
                    resume_requested: false,
                })
            }
            Op::Answer { resume } => {
                let m = mark.as_ref()?;
                let s = answer_step(&waiting(m), *resume).ok()?;
                assert_eq!(s.from, m.status);
                Some(Mark {
                    status: s.to,
                    answered: true,
                    resume_requested: m.resume_requested || s.event.resumes(),
                    ..m.clone()
                })
            }
            Op::Resume => {
                let m = mark.as_ref()?;
                let s = resume_step(&waiting(m)).ok()?;
                Some(Mark {
                    status: s.to,
                    resume_requested: true,
                    ..m.clone()
                })
            }
        }
    }

    proptest! {
        #[test]
        fn checkmark_rules_follow_the_model(ops in proptest::collection::vec(op(), 0..40)) {
            let mut mark: Option<Mark> = None;
            let mut answers_to_this_entry = 0;
            for op in ops {
                let want = model(&mark, &op);
                let got = rules(&mark, &op);
                prop_assert_eq!(&got, &want, "{:?} from {:?}", op, mark);
                if let Some(next) = got {
                    match op {
                        Op::Checkpoint { tests, .. } => {
                            answers_to_this_entry = 0;
                            if next.status == S::Done {
                                prop_assert!(matches!(tests, G::Pass | G::Skipped));
                            }
                        }
                        Op::Answer { .. } => answers_to_this_entry += 1,
                        Op::Resume => {}
                    }
                    prop_assert!(answers_to_this_entry <= 1, "an entry is answered once");
                    mark = Some(next);
                }
            }
        }
    }
}
