//! `improve_run` actions `export_skills` and `import_skills` (issue 56): a namespace's skills'
//! reviewable repository copy. `export_skills` writes each live skill of the namespace as
//! `skills/<id>/SKILL.md` (`skills::repo_copy`) to the branch `capsid-skills/<ns>` of the
//! namespace's repository through the GitHub App and opens a pull request, or adds to the one
//! open for that branch; a copy already on the default branch (or the branch) as rendered is
//! not committed again, so nothing changed commits nothing and says so, and a copy a person
//! edited there and nobody read back yet is not overwritten. `import_skills` reads
//! every `skills/*/SKILL.md` on the default branch: a copy that says what its stored skill says
//! is left, one that differs (or names no skill) becomes a `candidate` through the proposal
//! path (the row, its body document, its read-back marker and its audit row in one unit),
//! never live; a malformed copy, or one whose skill would apply beyond the caller's
//! namespaces, refuses the whole call naming the file and the field, and nothing is written.

use serde_json::json;

use super::{
    ExportPull, ImproveCx, ImproveRunAnswer, ReadBackCandidate, ReadBackSeen, SkillsExported,
    SkillsReadBack, refuse,
};
use crate::caller::Caller;
use crate::error::Result;
use crate::ports::{
    Contents, DocumentWrite, FileWrite, Proposed, ProposedSkill, RepoHost, RepoHostError, RepoRef,
    SkillRow,
};
use crate::service::Area as _;
use crate::skills::SkillStatus;
use crate::skills::abstraction::{SkillProposal, new_skill_id, skill_body_path};
use crate::skills::repo_copy::{
    REPO_SKILLS_DIR, SKILL_FILE, SKILL_FILES_MAX, SkillFile, export_branch, parse_skill_md,
    read_back_key, read_back_reach, render_skill_md, same_skill, skill_file_path, stored_skill,
};

/// A copy to write: its path and text.
struct RenderedCopy {
    path: String,
    text: String,
}

/// A copy read back: where, and what it says.
struct ReadCopy {
    path: String,
    file: SkillFile,
}

fn github(action: &str, e: &RepoHostError) -> ImproveRunAnswer {
    refuse(action, format!("{action}: GitHub: {e}"))
}

/// A file's text on `git_ref` (the default branch when `None`), `None` when absent.
async fn text_on(
    host: &dyn RepoHost,
    repo: &RepoRef,
    path: &str,
    git_ref: Option<&str>,
) -> std::result::Result<Option<(String, String)>, RepoHostError> {
    match host.contents(repo, path, git_ref).await {
        Ok(Contents::File(blob)) => Ok(Some((
            String::from_utf8_lossy(&blob.bytes).into_owned(),
            blob.sha,
        ))),
        Ok(_) => Err(RepoHostError::Rejected(format!("{path} is not a file"))),
        Err(RepoHostError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

impl ImproveCx<'_> {
    /// The stored skill `row` as a copy would hold it (its declared fields and its body
    /// document); `None` when its body document is gone.
    async fn stored_copy(&self, row: &SkillRow) -> Result<Option<SkillProposal>> {
        let declared = self
            .skills
            .skill_declared(&row.id)
            .await?
            .unwrap_or_default();
        let body = self
            .docs
            .document(&row.source_namespace, &row.body_ref)
            .await?
            .and_then(|d| d.body);
        Ok(body.map(|b| {
            stored_skill(
                row,
                declared.termination_test.as_deref(),
                declared.composition_interface.as_deref(),
                &b,
            )
        }))
    }

    /// `export_skills`: the live skills of `ns` to the repository, through a pull request.
    pub(crate) async fn export_skills_action(
        &self,
        caller: &Caller,
        ns: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "export_skills";
        let Some(ns) = ns else {
            return Ok(refuse(name, "export_skills needs a namespace"));
        };
        let (Some(host), Some(repo)) = (self.repo_host, self.loop_repo(ns).await?) else {
            return Ok(refuse(
                name,
                format!("export_skills needs the GitHub App and a repository {ns} maps"),
            ));
        };
        let host = host.as_ref();
        let mut copies = Vec::new();
        for row in self
            .skills
            .skills(Some(SkillStatus::Live.name()))
            .await?
            .into_iter()
            .filter(|s| s.source_namespace == ns)
        {
            let Some(skill) = self.stored_copy(&row).await? else {
                return Ok(refuse(
                    name,
                    format!(
                        "skill {}'s body document {} is missing; nothing was exported",
                        row.id, row.body_ref
                    ),
                ));
            };
            copies.push(RenderedCopy {
                path: skill_file_path(&row.id),
                text: render_skill_md(&SkillFile {
                    id: Some(row.id.clone()),
                    version: Some(row.version),
                    skill,
                }),
            });
        }
        copies.sort_by(|a, b| a.path.cmp(&b.path));
        let files: Vec<String> = copies.iter().map(|c| c.path.clone()).collect();
        let facts = match host.repository(&repo).await {
            Ok(f) => f,
            Err(e) => return Ok(github(name, &e)),
        };
        let default = facts.default_branch;
        // What the default branch does not already hold as rendered.
        // A copy a person edited on the default branch and nobody read back yet is left as it
        // is: overwriting it would lose the edit before it became a candidate.
        let mut changed = Vec::new();
        let mut unread = Vec::new();
        let now = self.now();
        for c in copies {
            match text_on(host, &repo, &c.path, None).await {
                Ok(Some((text, _))) if text == c.text => {}
                Ok(Some((text, _))) => match parse_skill_md(&text) {
                    Ok(edited)
                        if self
                            .settings
                            .setting(&read_back_key(ns, &edited.skill), now)
                            .await?
                            .is_none() =>
                    {
                        unread.push(c.path);
                    }
                    _ => changed.push(c),
                },
                Ok(None) => changed.push(c),
                Err(e) => return Ok(github(name, &e)),
            }
        }
        let branch = export_branch(ns);
        let mut answer = SkillsExported {
            ok: true,
            action: name,
            namespace: ns.to_owned(),
            repository: repo.to_string(),
            branch: branch.clone(),
            files,
            committed: Vec::new(),
            pull_request: None,
            pull: ExportPull::NotNeeded,
            unread,
            dry_run: dry,
            note: String::new(),
        };
        if changed.is_empty() {
            answer.note = if answer.unread.is_empty() {
                format!(
                    "the default branch {default} already holds every live skill of {ns} as stored: nothing committed"
                )
            } else {
                format!(
                    "nothing committed: the copies on {default} that differ were edited and not read back yet (import_skills first)"
                )
            };
            return Ok(answer.into());
        }
        if dry {
            answer.committed = changed.into_iter().map(|c| c.path).collect();
            answer.note = "dry run: these copies would be committed".into();
            return Ok(answer.into());
        }
        let open = match host.open_pull_requests(&repo, Some(&branch)).await {
            Ok(list) => list.into_iter().find(|p| p.head_ref == branch),
            Err(e) => return Ok(github(name, &e)),
        };
        if open.is_none() {
            // A branch left from a pull request merged or closed starts over at the default
            // branch's head, so the new pull request shows only what differs now.
            let head = match host.commits(&repo, &default, 1).await {
                Ok(mut list) if !list.is_empty() => list.swap_remove(0).sha,
                Ok(_) => return Ok(refuse(name, format!("{repo} has no commit on {default}"))),
                Err(e) => return Ok(github(name, &e)),
            };
            let made = match host.create_branch(&repo, &branch, &head).await {
                Err(RepoHostError::Rejected(_)) => match host.delete_branch(&repo, &branch).await {
                    Ok(()) => host.create_branch(&repo, &branch, &head).await,
                    Err(e) => Err(e),
                },
                other => other,
            };
            if let Err(e) = made {
                return Ok(github(name, &e));
            }
        }
        let message = format!("skills: the live skills of {ns} as Capsid stores them");
        for c in &changed {
            let current = match text_on(host, &repo, &c.path, Some(&branch)).await {
                Ok(found) => found,
                Err(e) => return Ok(github(name, &e)),
            };
            if current.as_ref().is_some_and(|(text, _)| *text == c.text) {
                continue;
            }
            let write = FileWrite {
                path: &c.path,
                content: &c.text,
                message: &message,
                branch: &branch,
                sha: current.as_ref().map(|(_, sha)| sha.as_str()),
            };
            if let Err(e) = host.put_file(&repo, &write).await {
                return Ok(github(name, &e));
            }
            answer.committed.push(c.path.clone());
        }
        let (number, url, pull) = match open {
            Some(p) if answer.committed.is_empty() => (p.number, p.url, ExportPull::Unchanged),
            Some(p) => (p.number, p.url, ExportPull::Updated),
            None => {
                let body = format!(
                    "The live skills of `{ns}` as Capsid stores them, one `skills/<id>/SKILL.md` each \
                     (the declared fields as front matter, then the instructions).\n\n\
                     This copy is the reviewable source: an edit merged here is read back by \
                     `improve_run` `import_skills` as a candidate skill, which goes live only on \
                     its evaluations.\n\n{}",
                    answer
                        .committed
                        .iter()
                        .map(|p| format!("- `{p}`"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                match host
                    .create_pull(
                        &repo,
                        &format!("skills: the live skills of {ns}"),
                        &branch,
                        &default,
                        &body,
                    )
                    .await
                {
                    Ok(p) => (p.number, p.url, ExportPull::Opened),
                    Err(e) => return Ok(github(name, &e)),
                }
            }
        };
        answer.pull_request = Some(number);
        answer.pull = pull;
        answer.note = if answer.committed.is_empty() {
            format!("pull request #{number} already holds every change: nothing committed")
        } else {
            format!(
                "{} cop{} committed to {branch}; pull request #{number} {}",
                answer.committed.len(),
                if answer.committed.len() == 1 {
                    "y"
                } else {
                    "ies"
                },
                pull.name()
            )
        };
        if !answer.committed.is_empty() || pull == ExportPull::Opened {
            self.audit_log
                .append_audit(self.audit(
                    caller,
                    "skills-exported",
                    Some(ns),
                    None,
                    json!({"repository": answer.repository, "branch": branch,
                           "committed": answer.committed, "pull_request": number, "pull": pull.name(),
                           "url": url}),
                ))
                .await?;
        }
        Ok(answer.into())
    }

    /// The copies under `skills/` on the default branch, each parsed; the first malformed one
    /// is the refusal, naming the file and the field.
    async fn read_copies(
        &self,
        host: &dyn RepoHost,
        repo: &RepoRef,
    ) -> std::result::Result<std::result::Result<Vec<ReadCopy>, String>, RepoHostError> {
        let entries = match host.contents(repo, REPO_SKILLS_DIR, None).await {
            Ok(Contents::Dir(entries)) => entries,
            Ok(_) | Err(RepoHostError::NotFound(_)) => return Ok(Ok(Vec::new())),
            Err(e) => return Err(e),
        };
        let mut dirs: Vec<String> = entries
            .into_iter()
            .filter(|e| e.kind == "dir")
            .map(|e| e.path)
            .collect();
        dirs.sort();
        if dirs.len() > SKILL_FILES_MAX {
            return Ok(Err(format!(
                "{REPO_SKILLS_DIR}/ holds {} folders; at most {SKILL_FILES_MAX} are read back",
                dirs.len()
            )));
        }
        let mut out = Vec::new();
        for dir in dirs {
            let path = format!("{dir}/{SKILL_FILE}");
            let Some((text, _)) = text_on(host, repo, &path, None).await? else {
                continue;
            };
            match parse_skill_md(&text) {
                Ok(file) => out.push(ReadCopy { path, file }),
                Err(why) => return Ok(Err(format!("{path}: {why}"))),
            }
        }
        Ok(Ok(out))
    }

    /// `import_skills`: the copies on the default branch that differ from their stored skill,
    /// each a candidate.
    pub(crate) async fn import_skills_action(
        &self,
        caller: &Caller,
        ns: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "import_skills";
        let Some(ns) = ns else {
            return Ok(refuse(name, "import_skills needs a namespace"));
        };
        let (Some(host), Some(repo)) = (self.repo_host, self.loop_repo(ns).await?) else {
            return Ok(refuse(
                name,
                format!("import_skills needs the GitHub App and a repository {ns} maps"),
            ));
        };
        let copies = match self.read_copies(host.as_ref(), &repo).await {
            Ok(Ok(copies)) => copies,
            Ok(Err(why)) => {
                return Ok(refuse(name, format!("{why}; nothing was read back")));
            }
            Err(e) => return Ok(github(name, &e)),
        };
        // Every check before anything is written.
        let mut unchanged = Vec::new();
        let mut differing = Vec::new();
        for c in copies {
            let Some(id) = &c.file.id else {
                differing.push(c);
                continue;
            };
            let Some(row) = self
                .skills
                .skill(id)
                .await?
                .filter(|r| r.source_namespace == ns)
            else {
                return Ok(refuse(
                    name,
                    format!(
                        "{}: id: no skill {id} of {ns} (leave id out for a new skill); nothing was read back",
                        c.path
                    ),
                ));
            };
            match self.stored_copy(&row).await? {
                Some(stored) if same_skill(&c.file.skill, &stored) => unchanged.push(c.path),
                _ => differing.push(c),
            }
        }
        if let Some((path, why)) = differing.iter().find_map(|c| {
            read_back_reach(&caller.scopes, &c.file.skill)
                .err()
                .map(|why| (&c.path, why))
        }) {
            return Ok(refuse(
                name,
                format!("{path}: {why}; nothing was read back"),
            ));
        }
        let mut answer = SkillsReadBack {
            ok: true,
            action: name,
            namespace: ns.to_owned(),
            repository: repo.to_string(),
            candidates: Vec::new(),
            already: Vec::new(),
            unchanged,
            dry_run: dry,
        };
        let now = self.now();
        for c in differing {
            let key = read_back_key(ns, &c.file.skill);
            if dry {
                answer.candidates.push(ReadBackCandidate {
                    file: c.path,
                    skill: None,
                    from_skill: c.file.id,
                });
                continue;
            }
            let id = new_skill_id(self.entropy);
            let path = skill_body_path(&id);
            let p = &c.file.skill;
            let audit = self.audit(
                caller,
                "skill-read-back",
                Some(ns),
                Some(&path),
                json!({"skill": id, "from_skill": c.file.id, "file": c.path,
                       "repository": answer.repository, "title": p.title}),
            );
            let proposal = ProposedSkill {
                row: SkillRow {
                    id: id.clone(),
                    source_namespace: ns.to_owned(),
                    title: p.title.clone(),
                    body_ref: path.clone(),
                    version: 1,
                    status: SkillStatus::Candidate.name().to_owned(),
                    wins: 0,
                    losses: 0,
                    trigger_condition: Some(p.trigger_condition.clone()),
                    namespaces: p.namespaces_json(),
                },
                source_attempt: None,
                source_job: None,
                termination_test: p.termination_test.clone(),
                composition_interface: p.composition_interface.clone(),
                body: DocumentWrite {
                    namespace: ns.to_owned(),
                    path,
                    title: Some(p.title.clone()),
                    body: Some(p.body.clone()),
                    doc_type: None,
                    status: None,
                    tags: None,
                    links: None,
                    at: now,
                },
                spent_key: key.clone(),
                spent_value: Some(id.clone()),
                audits: vec![audit],
            };
            match self.skill_sources.insert_proposed_skill(proposal).await? {
                Proposed::Inserted => answer.candidates.push(ReadBackCandidate {
                    file: c.path,
                    skill: Some(id),
                    from_skill: c.file.id,
                }),
                Proposed::Spent => {
                    let skill = self.settings.setting(&key, now).await?;
                    answer.already.push(ReadBackSeen {
                        file: c.path,
                        skill,
                    });
                }
            }
        }
        Ok(answer.into())
    }
}
