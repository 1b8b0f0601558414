//! A namespace's documents in the console, read-only: listed and read through the `list` and
//! `read` tools (the one scope check), escaped; a namespace or document that does not exist
//! is a clear 404 page, bad input a 400 page, never a 500, and reading changes nothing.

use serde_json::json;

use crate::console_local::Local;
use crate::env::*;

#[tokio::test]
async fn a_namespaces_documents_are_listed_and_read() {
    let env = Local::start().await;
    env.server.namespace("alpha").await;
    env.server.namespace("empty").await;
    env.server
        .admin(
            "write",
            json!({"namespace": "alpha", "path": "notes/cache.md", "title": "Cache <plan>",
                   "body": "# The cache\n\nUse <b>Postgres</b> & keep SQLite for tests.\n"}),
        )
        .await;
    let mut browser = Browser::new();
    let console = env.signed_in(&mut browser).await;
    assert!(
        console
            .body
            .contains("href=\"/console/documents?namespace=alpha\""),
        "the namespace links its documents"
    );
    let list = browser
        .get(&env.url("/console/documents?namespace=alpha"))
        .await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains("notes/cache.md"));
    assert!(list.body.contains("Cache &lt;plan&gt;") && !list.body.contains("<plan>"));
    assert!(
        list.body
            .contains("href=\"/console/documents?namespace=alpha&amp;path=notes%2Fcache.md\"")
    );
    let doc = browser
        .get(&env.url("/console/documents?namespace=alpha&path=notes%2Fcache.md"))
        .await;
    assert_eq!(doc.status, 200, "{}", doc.body);
    assert!(
        doc.body
            .contains("Use &lt;b&gt;Postgres&lt;/b&gt; &amp; keep SQLite for tests."),
        "{}",
        doc.body
    );
    assert!(!doc.body.contains("<b>Postgres</b>"));
    assert!(
        doc.body.contains("by cli:test"),
        "who wrote it last: {}",
        doc.body
    );
    let csp = doc.header("content-security-policy");
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    let empty = browser
        .get(&env.url("/console/documents?namespace=empty"))
        .await;
    assert_eq!(
        empty.status, 200,
        "a registered namespace with no documents"
    );
    assert!(empty.body.contains("No documents yet."));
}

#[tokio::test]
async fn missing_documents_are_404_and_bad_input_400_never_500() {
    let env = Local::start().await;
    env.server.namespace("alpha").await;
    let mut browser = Browser::new();
    env.signed_in(&mut browser).await;
    let before = env
        .server
        .store
        .recent_audit(&capsid_core::ports::AuditFilter::default(), 100)
        .await
        .expect("audit")
        .len();
    for (query, status) in [
        ("namespace=nowhere", 404),
        ("namespace=alpha&path=notes%2Fmissing.md", 404),
        ("namespace=nowhere&path=a.md", 404),
        ("", 400),
        ("namespace=", 400),
        ("namespace=..%2Fetc", 400),
        ("namespace=alpha&path=..%2F..%2Fetc%2Fpasswd", 400),
        ("namespace=alpha&path=", 400),
        ("namespace=alpha&path=%00", 400),
        // Undecodable bytes read as U+FFFD: a name nobody registered.
        ("namespace=%ff", 404),
        ("namespace=a%2Fb", 400),
    ] {
        let r = browser
            .get(&env.url(&format!("/console/documents?{query}")))
            .await;
        assert_eq!(r.status, status, "{query}: {}", r.body);
        assert!(
            r.header("content-type").starts_with("text/html"),
            "{query}: a page"
        );
    }
    let long = format!("namespace={}", "a".repeat(5000));
    let r = browser
        .get(&env.url(&format!("/console/documents?{long}")))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let after = env
        .server
        .store
        .recent_audit(&capsid_core::ports::AuditFilter::default(), 100)
        .await
        .expect("audit")
        .len();
    assert_eq!(before, after, "reading changes nothing");
    // Signed out: no documents.
    let r = Browser::new()
        .get(&env.url("/console/documents?namespace=alpha"))
        .await;
    assert_eq!(r.status, 401);
}
