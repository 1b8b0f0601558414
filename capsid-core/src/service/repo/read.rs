//! The repo read tools `list_repo_tree`, `read_repo_file`, `repo_refs` and `repo_history`
//! (reference 2.3): live GitHub reads through the port, briefly cached, with the reference's
//! result shapes, exclusivity rules and budgets.

use super::RepoCx;
use super::answer::{
    BatchFile, BatchFileFailed, BatchFileRead, BranchRow, ChangedFile, ChangedFiles, CommitLine,
    CommitList, CommitShown, Compared, FileBatch, FileRead, HistoryAnswer, OneCommit, OpenPullRow,
    ReadFileAnswer, RefsAnswer, TagRow, TreeAnswer, TreeItem,
};

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::ports::{CommitSummary, Contents, FileChange, TreeEntry};
use crate::service::Confirmer;
use crate::service::repo::args::{ListTreeArgs, ReadFileArgs, RepoHistoryArgs, RepoRefsArgs};
use crate::service::repo::{
    REPO_BATCH_MAX_FILES, REPO_FILE_BUDGET, REPO_HISTORY_DEFAULT_LIMIT, REPO_HISTORY_MAX_LIMIT,
    REPO_PATCH_BUDGET, REPO_READ_BUDGET, Target, check_path, check_positive, check_ref, host_error,
};

/// `text` cut to at most `max` bytes on a character boundary, and whether it was cut.
pub(crate) fn cut(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// The last `max` bytes of `text` on a character boundary, and whether it was cut.
pub(crate) fn tail(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (&text[start..], true)
}

fn tree_item(e: &TreeEntry) -> TreeItem {
    TreeItem {
        path: e.path.clone(),
        kind: e.kind.clone(),
        size: Some(e.size),
        sha: Some(e.sha.clone()),
    }
}

/// A commit in a list: the subject only (the first line); one commit by sha has it whole.
fn commit_line(c: &CommitSummary) -> CommitLine {
    CommitLine {
        sha: c.sha.clone(),
        date: c.date.clone(),
        author: c.author.clone(),
        subject: c.message.lines().next().unwrap_or_default().to_owned(),
    }
}

/// Changed files with status and line counts; patches only when asked, within
/// [`REPO_PATCH_BUDGET`] bytes across the list.
pub(crate) fn files_with_budget(files: &[FileChange], want_patch: bool) -> ChangedFiles {
    let (mut spent, mut truncated) = (0usize, false);
    let entries: Vec<ChangedFile> = files
        .iter()
        .map(|f| {
            let mut row = ChangedFile {
                path: f.path.clone(),
                status: f.status.clone(),
                additions: f.additions,
                deletions: f.deletions,
                patch: None,
            };
            if let (true, Some(patch)) = (want_patch, &f.patch) {
                if spent + patch.len() <= REPO_PATCH_BUDGET {
                    row.patch = Some(patch.clone());
                    spent += patch.len();
                } else {
                    truncated = true;
                }
            }
            row
        })
        .collect();
    ChangedFiles {
        count: entries.len(),
        patch_truncated: truncated,
        patch_bytes: spent,
        entries,
    }
}

impl RepoCx<'_> {
    pub(crate) async fn list_repo_tree(
        &self,
        caller: &Caller,
        a: ListTreeArgs,
        _: &dyn Confirmer,
    ) -> Result<TreeAnswer> {
        const TOOL: &str = "list_repo_tree";
        let path = a.path.as_ref().map(|p| p.as_str()).unwrap_or_default();
        check_path(TOOL, "path", Some(path).filter(|p| !p.is_empty()))?;
        let git_ref = a.git_ref.as_ref().map(|r| r.as_str());
        check_ref(TOOL, "ref", git_ref)?;
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let t = self
            .repo_target(caller, TOOL, a.namespace.as_str(), sel)
            .await?;
        let key = format!("tree\n{path}\n{}", git_ref.unwrap_or_default());
        if let Some(hit) = self.cached_read(&t.repo, &key) {
            return Ok(hit);
        }
        let contents = t
            .host
            .contents(&t.repo, path, git_ref)
            .await
            .map_err(|e| host_error(TOOL, e))?;
        let entries: Vec<TreeItem> = match &contents {
            Contents::Dir(entries) => entries.iter().map(tree_item).collect(),
            Contents::File(f) => vec![TreeItem {
                path: f.path.clone(),
                kind: "file".into(),
                size: Some(f.size),
                sha: Some(f.sha.clone()),
            }],
            Contents::Other { kind } => vec![TreeItem {
                path: path.to_owned(),
                kind: kind.clone(),
                size: None,
                sha: None,
            }],
        };
        let out = TreeAnswer {
            repo: t.full(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            entries,
        };
        self.keep_read(&t.repo, &key, &out);
        Ok(out)
    }

    /// One file, decoded to text (cached).
    async fn read_one(&self, t: &Target, path: &str, git_ref: Option<&str>) -> Result<FileRead> {
        const TOOL: &str = "read_repo_file";
        let key = format!("file\n{path}\n{}", git_ref.unwrap_or_default());
        if let Some(hit) = self.cached_read(&t.repo, &key) {
            return Ok(hit);
        }
        let file = match t
            .host
            .contents(&t.repo, path, git_ref)
            .await
            .map_err(|e| host_error(TOOL, e))?
        {
            Contents::File(f) => f,
            Contents::Dir(_) => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: {path} is a directory; use list_repo_tree"
                )));
            }
            Contents::Other { kind } => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: {path} is not a file (type: {kind})"
                )));
            }
        };
        let text = String::from_utf8_lossy(&file.bytes);
        let (kept, truncated) = cut(&text, REPO_READ_BUDGET);
        let note = truncated.then(|| {
            format!(
                "{path} is {} bytes; only its first {} bytes are shown (the single-file budget is {REPO_READ_BUDGET} bytes). Find lines past the cut with search_code.",
                file.bytes.len(),
                kept.len()
            )
        });
        let out = FileRead {
            repo: t.full(),
            path: path.to_owned(),
            size: file.size,
            sha: file.sha,
            truncated,
            content: kept.to_owned(),
            note,
        };
        self.keep_read(&t.repo, &key, &out);
        Ok(out)
    }

    pub(crate) async fn read_repo_file(
        &self,
        caller: &Caller,
        a: ReadFileArgs,
        _: &dyn Confirmer,
    ) -> Result<ReadFileAnswer> {
        const TOOL: &str = "read_repo_file";
        // Exactly one of the two: accepting both and preferring one would hide the other.
        let paths = match (&a.path, &a.paths) {
            (Some(_), Some(_)) => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: pass path for one file or paths for several, not both"
                )));
            }
            (None, None) => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: pass path for one file, or paths for several"
                )));
            }
            (Some(p), None) => {
                check_path(TOOL, "path", Some(p.as_str()))?;
                None
            }
            (None, Some(list)) if list.is_empty() => {
                return Err(Error::Invalid(format!("{TOOL}: paths was empty")));
            }
            (None, Some(list)) if list.len() > REPO_BATCH_MAX_FILES => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: paths has {} entries; the batch maximum is {REPO_BATCH_MAX_FILES}",
                    list.len()
                )));
            }
            (None, Some(list)) => Some(list),
        };
        let git_ref = a.git_ref.as_ref().map(|r| r.as_str());
        check_ref(TOOL, "ref", git_ref)?;
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let t = self
            .repo_target(caller, TOOL, a.namespace.as_str(), sel)
            .await?;
        let Some(paths) = paths else {
            let path = a.path.as_ref().map(|p| p.as_str()).unwrap_or_default();
            return self
                .read_one(&t, path, git_ref)
                .await
                .map(ReadFileAnswer::One);
        };
        // One failed path never fails the batch: each file answers for itself.
        let mut files = Vec::with_capacity(paths.len());
        let (mut failed, mut bytes) = (0usize, 0usize);
        for p in paths {
            let path = p.as_str();
            let read = match check_path(TOOL, "paths[]", Some(path)) {
                Ok(()) => self.read_one(&t, path, git_ref).await,
                Err(e) => Err(e),
            };
            match read {
                Ok(one) => {
                    let (kept, truncated) = cut(&one.content, REPO_FILE_BUDGET);
                    bytes += kept.len();
                    files.push(BatchFile::Read(BatchFileRead {
                        path: path.to_owned(),
                        size: one.size,
                        sha: one.sha.clone(),
                        truncated,
                        content: kept.to_owned(),
                    }));
                }
                Err(e) => {
                    failed += 1;
                    files.push(BatchFile::Failed(BatchFileFailed {
                        path: path.to_owned(),
                        error: e.to_string(),
                    }));
                }
            }
        }
        Ok(ReadFileAnswer::Batch(FileBatch {
            repo: t.full(),
            requested: paths.len(),
            ok: paths.len() - failed,
            failed,
            bytes,
            files,
        }))
    }

    pub(crate) async fn repo_refs(
        &self,
        caller: &Caller,
        a: RepoRefsArgs,
        _: &dyn Confirmer,
    ) -> Result<RefsAnswer> {
        const TOOL: &str = "repo_refs";
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let t = self
            .repo_target(caller, TOOL, a.namespace.as_str(), sel)
            .await?;
        if let Some(hit) = self.cached_read(&t.repo, "refs") {
            return Ok(hit);
        }
        let default = self.default_branch(TOOL, &t).await?;
        let err = |e| host_error(TOOL, e);
        let branches = t.host.branches(&t.repo).await.map_err(err)?;
        let tags = t.host.tags(&t.repo).await.map_err(err)?;
        let prs = t
            .host
            .open_pull_requests(&t.repo, None)
            .await
            .map_err(err)?;
        let mut rows = Vec::with_capacity(branches.len());
        for b in &branches {
            let open_pr = prs.iter().find(|p| p.head_ref == b.name).map(|p| p.number);
            let mut row = BranchRow {
                name: b.name.clone(),
                sha: b.sha.clone(),
                committed_date: None,
                ahead_by: None,
                behind_by: None,
                open_pr,
                is_default: b.name == default,
            };
            if b.name == default {
                row.ahead_by = Some(0);
                row.behind_by = Some(0);
            } else if let Ok(c) = t.host.compare(&t.repo, &default, &b.name).await {
                row.ahead_by = Some(c.ahead_by);
                row.behind_by = Some(c.behind_by);
                if let Some(last) = c.commits.last() {
                    row.committed_date = Some(last.committed_date.clone());
                }
            }
            rows.push(row);
        }
        let full_page = |n: usize| n >= 100;
        let out = RefsAnswer {
            repo: t.full(),
            truncated: full_page(branches.len()) || full_page(tags.len()) || full_page(prs.len()),
            default_branch: default,
            branches: rows,
            tags: tags
                .iter()
                .map(|t| TagRow {
                    name: t.name.clone(),
                    sha: t.sha.clone(),
                })
                .collect(),
            pull_requests: prs
                .iter()
                .map(|p| OpenPullRow {
                    number: p.number,
                    title: p.title.clone(),
                    head: p.head_ref.clone(),
                    base: p.base_ref.clone(),
                    updated_at: p.updated_at.clone(),
                    url: p.url.clone(),
                })
                .collect(),
        };
        self.keep_read(&t.repo, "refs", &out);
        Ok(out)
    }

    pub(crate) async fn repo_history(
        &self,
        caller: &Caller,
        a: RepoHistoryArgs,
        _: &dyn Confirmer,
    ) -> Result<HistoryAnswer> {
        const TOOL: &str = "repo_history";
        let (git_ref, base, head, sha) = (
            a.git_ref.as_ref().map(|r| r.as_str()),
            a.base.as_ref().map(|r| r.as_str()),
            a.head.as_ref().map(|r| r.as_str()),
            a.sha.as_ref().map(|r| r.as_str()),
        );
        for (field, value) in [
            ("ref", git_ref),
            ("base", base),
            ("head", head),
            ("sha", sha),
        ] {
            check_ref(TOOL, field, value)?;
        }
        check_positive(TOOL, "limit", a.limit.map(u64::from))?;
        // The mode is chosen by which arguments are present; an ambiguous mix is refused.
        match (base, head) {
            (Some(_), None) => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: base was given without head; a comparison needs both"
                )));
            }
            (None, Some(_)) => {
                return Err(Error::Invalid(format!(
                    "{TOOL}: head was given without base; a comparison needs both"
                )));
            }
            _ => {}
        }
        let compare = base.zip(head);
        let asked: Vec<&str> = [
            sha.map(|_| "sha"),
            compare.map(|_| "base+head"),
            git_ref.map(|_| "ref"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if asked.len() > 1 {
            return Err(Error::Invalid(format!(
                "{TOOL}: {} are different questions; pass exactly one of sha, base+head, or ref",
                asked.join(" and ")
            )));
        }
        if asked.is_empty() {
            return Err(Error::Invalid(format!(
                "{TOOL}: pass ref for commits on a ref, base and head to compare, or sha for one commit"
            )));
        }
        let limit = a
            .limit
            .unwrap_or(REPO_HISTORY_DEFAULT_LIMIT)
            .clamp(1, REPO_HISTORY_MAX_LIMIT);
        let patch = a.patch == Some(true);
        let sel = a.repo.as_ref().map(|r| r.as_str());
        let t = self
            .repo_target(caller, TOOL, a.namespace.as_str(), sel)
            .await?;
        let key = format!("history\n{sha:?}\n{compare:?}\n{git_ref:?}\n{limit}\n{patch}");
        if let Some(hit) = self.cached_read(&t.repo, &key) {
            return Ok(hit);
        }
        let err = |e| host_error(TOOL, e);
        let out = if let Some(sha) = sha {
            let c = t.host.commit(&t.repo, sha).await.map_err(err)?;
            HistoryAnswer::Commit(OneCommit {
                repo: t.full(),
                mode: "commit",
                files: files_with_budget(&c.files, patch),
                commit: CommitShown {
                    sha: c.commit.sha,
                    date: c.commit.date,
                    author: c.commit.author,
                    message: c.commit.message,
                    parents: c.parents,
                },
            })
        } else if let Some((base, head)) = compare {
            let c = t.host.compare(&t.repo, base, head).await.map_err(err)?;
            HistoryAnswer::Compare(Compared {
                repo: t.full(),
                mode: "compare",
                base: base.to_owned(),
                head: head.to_owned(),
                commits: c
                    .commits
                    .iter()
                    .take(limit as usize)
                    .map(commit_line)
                    .collect(),
                files: files_with_budget(&c.files, patch),
                status: c.status,
                ahead_by: c.ahead_by,
                behind_by: c.behind_by,
                total_commits: c.total_commits,
            })
        } else {
            let git_ref = git_ref.unwrap_or_default();
            let rows = t.host.commits(&t.repo, git_ref, limit).await.map_err(err)?;
            HistoryAnswer::Commits(CommitList {
                repo: t.full(),
                mode: "commits",
                git_ref: git_ref.to_owned(),
                limit,
                commits: rows.iter().take(limit as usize).map(commit_line).collect(),
            })
        };
        self.keep_read(&t.repo, &key, &out);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_respect_char_boundaries() {
        assert_eq!(cut("héllo", 2), ("h", true));
        assert_eq!(cut("abc", 3), ("abc", false));
        assert_eq!(tail("héllo", 4), ("llo", true));
        assert_eq!(tail("abc", 5), ("abc", false));
    }

    #[test]
    fn patches_only_on_request_and_within_budget() {
        let big = "x".repeat(REPO_PATCH_BUDGET - 10);
        let files = vec![
            FileChange {
                path: "a".into(),
                status: "modified".into(),
                additions: 1,
                deletions: 0,
                patch: Some(big.clone()),
            },
            FileChange {
                path: "b".into(),
                status: "added".into(),
                additions: 2,
                deletions: 0,
                patch: Some("y".repeat(20)),
            },
        ];
        let off = files_with_budget(&files, false);
        assert_eq!(off.patch_bytes, 0);
        assert!(off.entries[0].patch.is_none());
        let on = files_with_budget(&files, true);
        assert_eq!(
            on.entries[0].patch.as_deref().map(str::len),
            Some(big.len())
        );
        assert!(on.entries[1].patch.is_none(), "over budget");
        assert!(on.patch_truncated);
        assert_eq!(on.count, 2);
    }
}
