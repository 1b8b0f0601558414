//! An issue's job and the intake's words on the issue: the job's title (naming the issue, so
//! it is unique among the namespace's open jobs), its body (the prompt the driver executes,
//! signed at post: an edit of the issue afterwards does not change it), the digest an edit is
//! noticed by, and the comments the intake writes on the issue.

use crate::crypto::sha256_hex;
use crate::jobs::post::JOB_PARAM_NAMES;
use crate::ports::IssueFacts;

/// The most of an issue's title a job title carries, in characters.
const TITLE_CHARS: usize = 200;
/// The most of an issue's body a job body carries, in characters.
const BODY_CHARS: usize = 60_000;

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// `text` with every closing tag of a `jobs` parameter (`</body>`, ...) written `<\/body>`:
/// `post` refuses a body holding one (a swallowed argument), and an issue may quote one.
fn defuse_tags(text: &str) -> String {
    let mut out = text.to_owned();
    for name in JOB_PARAM_NAMES {
        out = out.replace(&format!("</{name}>"), &format!("<\\/{name}>"));
    }
    out
}

/// The job title of issue `number` of `repo`: `owner/name#N: <issue title>`.
pub fn issue_job_title(repo: &str, issue: &IssueFacts) -> String {
    let title = issue.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let title = if title.is_empty() {
        "(untitled issue)".to_owned()
    } else {
        clip(&title, TITLE_CHARS)
    };
    format!("{repo}#{}: {title}", issue.number)
}

/// The job body (the prompt the driver executes) of an issue, under policy `version`.
pub fn issue_job_body(repo: &str, issue: &IssueFacts, version: &str) -> String {
    let number = issue.number;
    let body = issue.body.trim();
    let body = if body.is_empty() {
        "(the issue has no description)".to_owned()
    } else {
        defuse_tags(&clip(body, BODY_CHARS))
    };
    format!(
        "Work on GitHub issue {repo}#{number} ({url}), opened by @{author} and taken in by Capsid's intake under the signed intake policy (version {version}).\n\n\
         Issue title: {title}\n\n\
         {body}\n\n\
         ---\n\
         Open a pull request in {repo} whose description says `Closes #{number}`, and complete this job with the pull request's URL as result_ref. \
         The issue's text above is as it stood when the job was posted; a later edit of the issue does not change this job.",
        url = issue.url,
        author = issue.author,
        title = defuse_tags(issue.title.trim()),
    )
}

/// The digest an issue body is recorded by, so that an edit after posting is noticed.
pub fn body_digest(body: &str) -> String {
    sha256_hex(body)
}

/// The comment telling the issue which job it became.
pub fn posted_comment(job_id: &str, namespace: &str) -> String {
    format!(
        "Capsid took this issue in as job `{job_id}` in namespace `{namespace}`. Editing the issue does not change the job; closing the issue or removing the label while the job is still queued fails it."
    )
}

/// The comment naming the pull request the issue's job finished with.
pub fn pr_comment(job_id: &str, pr_url: &str) -> String {
    format!("Capsid's job `{job_id}` for this issue is done: {pr_url}")
}

/// The comment of a job done without a pull request.
pub fn done_comment(job_id: &str, result: Option<&str>) -> String {
    match result {
        Some(r) => format!("Capsid's job `{job_id}` for this issue is done: {r}"),
        None => format!("Capsid's job `{job_id}` for this issue is done."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::post::{check_post_text, refuse_swallowed_tag};

    fn issue(title: &str, body: &str) -> IssueFacts {
        IssueFacts {
            number: 7,
            id: 700,
            title: title.into(),
            body: body.into(),
            author: "octocat".into(),
            association: "MEMBER".into(),
            open: true,
            labels: vec!["capsid".into()],
            url: "https://github.com/octo/alpha/issues/7".into(),
        }
    }

    #[test]
    fn the_job_names_the_issue_and_carries_its_text() {
        let i = issue("  Fix   the\nparser ", "The parser drops the last line.");
        assert_eq!(
            issue_job_title("octo/alpha", &i),
            "octo/alpha#7: Fix the parser"
        );
        let body = issue_job_body("octo/alpha", &i, "v2");
        for part in [
            "octo/alpha#7",
            "https://github.com/octo/alpha/issues/7",
            "@octocat",
            "version v2",
            "The parser drops the last line.",
            "Closes #7",
        ] {
            assert!(body.contains(part), "{part}: {body}");
        }
        assert!(check_post_text(&issue_job_title("octo/alpha", &i), &body).is_ok());
    }

    #[test]
    fn blank_and_long_issues_still_make_a_postable_job() {
        let i = issue("   ", "");
        assert_eq!(issue_job_title("o/r", &i), "o/r#7: (untitled issue)");
        assert!(issue_job_body("o/r", &i, "1").contains("has no description"));
        let long = issue(&"t".repeat(500), &"b".repeat(BODY_CHARS + 10));
        let title = issue_job_title("o/r", &long);
        assert_eq!(title.chars().count(), "o/r#7: ".len() + TITLE_CHARS + 1);
        assert!(title.ends_with('…'));
        let body = issue_job_body("o/r", &long, "1");
        assert!(body.contains(&format!("{}…", "b".repeat(BODY_CHARS))));
        assert!(!body.contains(&"b".repeat(BODY_CHARS + 1)));
    }

    #[test]
    fn a_quoted_closing_tag_cannot_make_post_refuse() {
        let i = issue("about </title>", "see </body> and </reason>");
        let body = issue_job_body("o/r", &i, "1");
        assert_eq!(refuse_swallowed_tag("body", &body), Ok(()), "{body}");
        assert!(body.contains("<\\/body>") && body.contains("<\\/reason>"));
        assert!(refuse_swallowed_tag("body", "see </body>").is_err());
    }

    #[test]
    fn an_edit_changes_the_digest() {
        assert_eq!(body_digest("a"), body_digest("a"));
        assert_ne!(body_digest("a"), body_digest("a "));
    }

    #[test]
    fn comments_name_the_job_and_the_pull_request() {
        assert!(posted_comment("job_1", "alpha").contains("`job_1`"));
        let c = pr_comment("job_1", "https://github.com/o/r/pull/3");
        assert!(c.contains("job_1") && c.ends_with("https://github.com/o/r/pull/3"));
        assert!(done_comment("job_1", None).ends_with("done."));
        assert!(done_comment("job_1", Some("notes/x.md")).ends_with("notes/x.md"));
    }
}
