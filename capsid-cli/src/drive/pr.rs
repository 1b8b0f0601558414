//! The pull request of a boxed job's branch (issue 48). The agent in its box reaches no forge
//! (its only way out for git is the gateway), so the driver opens the job's PR itself once the
//! run has shipped and its own tests pass: through the server's `open_pr`, with the GitHub App
//! the server holds and the driver's own key. What the agent printed is never taken for a PR.

use serde_json::json;

use super::Ready;
use super::mcp::Answer;

/// The PR's body: the job it ships (the autonomy checks find the job by this line), then what
/// the driver saw.
fn body(id: &str, summary: &str) -> String {
    format!(
        "Capsid job {id}\n\n{summary}\n\nOpened by capsid drive from the job's branch as its git gateway forwarded it."
    )
}

/// Opens the PR of `capsid/<id>` onto `base` titled `title`: its URL, or why there is none (the
/// server's refusal, for example a namespace that maps no GitHub repository or a server without
/// a GitHub App).
pub(crate) async fn open(
    r: &Ready,
    id: &str,
    title: &str,
    base: &str,
    summary: &str,
) -> Result<String, String> {
    let args = json!({
        "namespace": r.namespace,
        "title": title,
        "head": format!("capsid/{id}"),
        "base": base,
        "body": body(id, summary),
    });
    match r.mcp.call("open_pr", args).await {
        Ok(Answer::Ok(v)) => v["url"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("open_pr answered no url: {v}")),
        Ok(Answer::Refused(why)) => Err(why),
        Err(e) => Err(format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_body_names_the_job_on_its_first_line() {
        let b = super::body("job_0123456789ab", "Shipped widgets.");
        assert_eq!(b.lines().next(), Some("Capsid job job_0123456789ab"));
        assert!(b.contains("Shipped widgets."), "{b}");
    }
}
