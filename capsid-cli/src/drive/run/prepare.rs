//! The first phase of a run: everything set up before the agent starts.

use anyhow::{Context, Result};
use capsid_core::drive::push_policy::{Approval, approvals_in_command};
use capsid_core::jobs::block::command_from_summary;
use capsid_core::jobs::role::Role;
use capsid_core::jobs::signature::split_signed;
use serde_json::json;

use super::super::agent::{RunFiles, mise_install, run_files};
use super::super::boxed::Place;
use super::super::githook::Installed;
use super::super::model_door::ModelSettings;
use super::super::proc::{default_branch, git};
use super::super::{Claimed, Ready, Resume, boxed, githook, preflight, worktree};
use super::{RunState, checkpoint, hide_path};

/// A claimed job's run, set up: what the session and the verdict read.
pub(super) struct Prepared {
    /// The job as the claim answered it.
    pub job: capsid_core::jobs::Job,
    /// Its id.
    pub id: String,
    /// The driver's agent name (the job's holder).
    pub agent: String,
    /// The claim's run credential, the agent's only key.
    pub credential: String,
    /// The job's role as the server defines it.
    pub role: Option<Role>,
    /// What the agent is given: the role's preamble and the job's body.
    pub body: String,
    /// A person's answer, when the job was resumed.
    pub resume: Option<Resume>,
    /// The held pushes a person approved on resuming.
    pub approvals: Vec<Approval>,
    /// The default branch.
    pub base: String,
    /// The commit the job's branch started from.
    pub base_sha: String,
    /// The branches only a person moves.
    pub protected: Vec<String>,
    /// The run's own folder (its state).
    pub files: RunFiles,
    /// What the driver kept of earlier stops.
    pub state: RunState,
    /// The box's place (`None`: unboxed).
    pub place: Option<Place>,
    /// Where the agent works: the box's clone, or the worktree.
    pub wt: std::path::PathBuf,
    /// The worktree's git hooks (unboxed only).
    pub githooks: Option<Installed>,
    /// The agent's run files (in the box's HOME when boxed).
    pub agent_files: RunFiles,
    /// The protected branches' heads before the session.
    pub protected_before: Vec<(String, String)>,
    /// The run's model door settings (its cap and ledger).
    pub model: ModelSettings,
}

/// Sets the claimed job's run up: its terms, its place (the box's clone, or a worktree), the
/// role's skill, the gates' settings and the run's files; what the session and the verdict
/// need of it.
pub(super) async fn prepare(r: &Ready, claimed: Claimed) -> Result<Prepared> {
    let Claimed {
        job,
        resume,
        credential,
        max_cost_usd,
        spent_usd,
        role,
    } = claimed;
    let credential = credential.as_deref();
    let id = job.id.clone();
    // The run's cap: the job's (as the server answered it) or the driver's, whichever is less,
    // less what the job's earlier sessions spent; each call goes to the job's ledger.
    let ledger = super::super::model_door::ServerLedger {
        mcp: r.mcp.clone(),
        namespace: r.namespace.clone(),
        job: id.clone(),
    };
    let model = r.model.for_job(max_cost_usd, spent_usd, Some(ledger));
    let agent = job
        .claimed_by
        .as_deref()
        .and_then(|a| a.strip_prefix("agent:"))
        .context("the job is not held by a minted agent; drive with an agent key")?
        .to_owned();
    let credential = credential.map(str::to_owned).context(
        "the server issued no run credential with the claim (a server older than this driver?); the agent is never given the driver's key, so the run stops here",
    )?;
    // The job's role as the server defines it for the namespace (the name is the signed
    // envelope's; what it ships, may do and says is the server's definition, never the name).
    if let (Some(name), None) = (job.role.as_deref(), role.as_ref()) {
        anyhow::bail!(
            "the job names the role {name}, which namespace {} does not define now (no signed capsid/policy/roles/{}/{name}.md, or a server older than this driver); sign the role's document, or post the job with a role that exists",
            r.namespace,
            r.namespace
        );
    }
    let stored = job.body.as_str();
    let body = split_signed(stored).map_or(stored, |p| p.body);
    let body = match role.as_ref() {
        Some(role) => format!("{}{body}", role.preamble()),
        None => body.to_owned(),
    };
    // A person who resumed a job the gateway held a push for approved exactly those updates
    // (the command the job blocked on, as the server keeps it): the resumed run's gateway
    // lets the same push through.
    let approvals = match &resume {
        Some(_) => job
            .result_summary
            .as_deref()
            .and_then(command_from_summary)
            .map(approvals_in_command)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let base = default_branch(&r.root).await?;
    // The branches only a person moves: the namespace's setting as the server keeps it now,
    // and the default branch.
    let protected = capsid_core::drive::hooks::protected_branches_of(
        super::super::namespace_runner(&r.mcp, &r.namespace)
            .await?
            .protected_branches()
            .as_deref(),
        Some(&base),
    );
    let files = run_files(r, &id)?;
    let mut state = RunState::load(&files.dir);
    let base_sha = match &state.base_sha {
        Some(sha) => sha.clone(),
        None => {
            git(
                &r.root,
                &["rev-parse", "--verify", &format!("{base}^{{commit}}")],
            )
            .await?
        }
    };
    state.base_sha = Some(base_sha.clone());
    state.save(&files.dir);
    // Boxed: the job's own clone of the namespace's mirror; else a worktree of the checkout.
    let place = match &r.boxed {
        Some(b) => Some(boxed::place(r, b, &id, &base_sha, resume.is_some()).await?),
        None => None,
    };
    // A worktree is made and set up (its hooks, its excludes, its config) holding the
    // repository's worktrees: runs side by side would read each other's half-made ones.
    let (wt, held) = match &place {
        Some(p) => (p.clone.clone(), None),
        None => {
            let held = worktree::hold().await;
            let wt = worktree::ensure(&held, &r.root, &id, &base_sha).await?;
            (wt, Some(held))
        }
    };
    eprintln!(
        "capsid drive: {id} in {} (runtime {})",
        wt.display(),
        r.runtime.name()
    );
    // A resumed boxed job's clone holds what the agent wrote: the driver runs nothing in it
    // on the host (git reads its config, mise its files, and either can be told to run a
    // program), and a fresh one holds only the project's own commit.
    let host_may_touch = place.is_none() || resume.is_none();
    if place.is_none() {
        // The box cannot see what mise installs on the host.
        mise_install(&wt).await;
    }
    // The project's settings cannot switch Capsid's hooks off.
    let stripped = if host_may_touch {
        preflight::strip_disable_all_hooks(&wt).map_err(anyhow::Error::msg)?
    } else {
        Vec::new()
    };
    for file in stripped {
        let rel = file
            .strip_prefix(&wt)
            .unwrap_or(&file)
            .display()
            .to_string();
        hide_path(&wt, &rel).await;
        eprintln!(
            "capsid drive: removed \"disableAllHooks\" from {} in the job's worktree: Capsid's gates stay on",
            file.display()
        );
    }
    // The role's instructions, as a skill the CLI loads from the project (kept out of the
    // agent's commits). A resumed boxed clone has it already, and the host writes nothing there.
    if let (Some(role), true) = (role.as_ref(), host_may_touch) {
        let rel = format!(
            "{}/{}/SKILL.md",
            r.runtime.kind().skills_dir(),
            role.skill_name()
        );
        let path = wt.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, role.skill_md())
            .with_context(|| format!("writing the {} skill to {}", role.name, path.display()))?;
        hide_path(&wt, &rel).await;
    }
    let mut gate_settings = vec![
        (
            "CAPSID_MCP_URL".to_owned(),
            super::super::mcp::mcp_url(&r.url),
        ),
        ("CAPSID_NAMESPACE".to_owned(), r.namespace.clone()),
        ("CAPSID_DEFAULT_BRANCH".to_owned(), base.clone()),
        ("CAPSID_TEST_COMMAND".to_owned(), r.tests.command.clone()),
        ("CAPSID_RUN_DIR".to_owned(), files.dir.display().to_string()),
    ];
    if let Some(b) = &r.build {
        gate_settings.push(("CAPSID_BUILD_COMMAND".to_owned(), b.command.clone()));
    }
    // A boxed run's push gate is the gateway; git's own hooks are the worktree's.
    let githooks = match &place {
        Some(_) => None,
        None => Some(githook::install_for_worktree(&r.root, &wt, &gate_settings).await?),
    };
    drop(held);
    // The agent's run files: in the box's HOME for a boxed run (the run folder is not there).
    let agent_files = match &place {
        Some(p) => r
            .runtime
            .write_files(p.run_dir.clone(), &boxed::inside_mcp_url(r))?,
        None => run_files(r, &id)?,
    };
    let protected_before = githook::protected_refs(&r.root, &protected).await;
    checkpoint(
        r,
        &id,
        json!({
            "status": "working",
            "where_it_stopped": if resume.is_some() { format!("resumed {id} with the answer in {} ({})", wt.display(), r.runtime.name()) } else { format!("claimed {id}; the agent ({}) starts in {}", r.runtime.name(), wt.display()) },
            "summary": format!("{} {id}: {}", if resume.is_some() { "resumed" } else { "claimed" }, job.title),
        }),
    )
    .await?;
    Ok(Prepared {
        job,
        id,
        agent,
        credential,
        role,
        body,
        resume,
        approvals,
        base,
        base_sha,
        protected,
        files,
        state,
        place,
        wt,
        githooks,
        agent_files,
        protected_before,
        model,
    })
}
