//! Self-contained HTML pages (consent, console, confirmation, errors): no inline scripts (the
//! console alone loads one same-origin script, `/console/live.js`, and works without it), no
//! external fonts or images, one inline stylesheet allowed by its hash under a `default-src 'none'`
//! policy, light and dark through `prefers-color-scheme`, every value escaped.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

/// Gives every cell of the page's tables its column's name (`data-label`) and marks each
/// header row, so a narrow screen shows each row as a card of labelled lines instead of a
/// table cut at its right edge.
pub fn labelled_tables(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 8);
    let mut rest = html;
    while let Some(start) = rest.find("<table") {
        let Some(len) = rest[start..].find("</table>") else {
            break;
        };
        let end = start + len + "</table>".len();
        out.push_str(&rest[..start]);
        out.push_str(&label_table(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The text of an HTML fragment without its tags.
fn strip_tags(fragment: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in fragment.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.trim().to_owned()
}

fn label_table(table: &str) -> String {
    let mut rows = table.split("<tr");
    let mut out = rows.next().unwrap_or_default().to_owned();
    let mut labels: Vec<String> = Vec::new();
    for row in rows {
        if labels.is_empty() && row.contains("<th") {
            labels = row
                .split("<th")
                .skip(1)
                .map(|cell| strip_tags(&format!("<th{cell}")))
                .collect();
            out.push_str("<tr class=\"head\"");
            out.push_str(row);
            continue;
        }
        out.push_str("<tr");
        let mut cells = row.split("<td");
        out.push_str(cells.next().unwrap_or_default());
        for (i, cell) in cells.enumerate() {
            out.push_str("<td");
            let starts_cell = cell.starts_with('>') || cell.starts_with(' ');
            if let Some(label) = labels
                .get(i)
                .filter(|l| starts_cell && !l.is_empty() && !cell.contains("colspan"))
            {
                out.push_str(" data-label=\"");
                out.push_str(label);
                out.push('"');
            }
            out.push_str(cell);
        }
    }
    out
}

/// The one stylesheet of every page.
pub const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#fbfbf8;--fg:#1d1f21;--muted:#5d6166;--line:#d9dad5;--card:#ffffff;--accent:#1f5fbf;--warn:#a33a12;--ok:#1c7a3a;--amber:#9a6700}\
@media (prefers-color-scheme: dark){:root{--bg:#15171a;--fg:#e6e6e3;--muted:#a0a4a8;--line:#34383d;--card:#1d2024;--accent:#7fb0ff;--warn:#ff9b73;--ok:#6fd28f;--amber:#f2c14e}}\
*{box-sizing:border-box}\
body{margin:0;padding:1.5rem;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,\"Segoe UI\",sans-serif}\
h1{font-size:1.4rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}\
.muted{color:var(--muted)}.warn{color:var(--warn)}.ok{color:var(--ok)}\
header{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:baseline;border-bottom:1px solid var(--line);padding-bottom:.75rem}\
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem;margin:.75rem 0}\
table{border-collapse:collapse;width:100%;background:var(--card)}\
th,td{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}\
th{font-weight:600;color:var(--muted);font-size:.85rem}\
code{font:13px ui-monospace,Menlo,Consolas,monospace;background:var(--bg);padding:0 .2rem;border-radius:3px}\
form.inline{display:inline-flex;gap:.25rem;margin:0}\
input[type=text],select{font:inherit;padding:.2rem .35rem;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg)}\
button{font:inherit;padding:.2rem .6rem;border:1px solid var(--accent);border-radius:4px;background:var(--accent);color:var(--bg);cursor:pointer}\
button.quiet{background:transparent;color:var(--accent)}\
h3{font-size:1rem;margin:1rem 0 .4rem}\
.badge{display:inline-block;padding:0 .45rem;border:1px solid currentColor;border-radius:999px;font-size:.8rem;white-space:nowrap}\
.s-working{color:var(--accent)}.s-paused_for_input{color:var(--amber)}.s-blocked{color:var(--warn)}.s-done{color:var(--ok)}\
.g-pass{color:var(--ok)}.g-fail{color:var(--warn)}.g-unknown,.g-skipped{color:var(--muted)}\
.door-refused{color:var(--warn)}.door-failed{color:var(--amber)}.door-reached{color:var(--ok)}\
form.answer{display:flex;flex-wrap:wrap;gap:.35rem;align-items:flex-start;margin:0}\
textarea{font:inherit;flex:1 1 24rem;min-height:3.2rem;padding:.3rem .4rem;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg)}\
a{color:var(--accent)}\
.s-failed{color:var(--warn)}\
nav.session{display:flex;flex-wrap:wrap;gap:.35rem;margin-left:auto}\
form.inline{flex-wrap:wrap;max-width:100%}\
input[type=text]{min-width:0;max-width:100%}\
textarea{min-width:0;max-width:100%}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;font:13px ui-monospace,Menlo,Consolas,monospace;background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:.5rem;margin:.35rem 0}\
code{overflow-wrap:anywhere}\
ul.items{list-style:none;margin:0;padding:0}\
li.item{border-top:1px solid var(--line);padding:.5rem 0}\
li.item>div,li.item>form,li.item>pre{margin-top:.35rem}\
li.item .actions{display:flex;flex-wrap:wrap;gap:.35rem}\
section#waiting h2{margin-top:0}\
@media (max-width:700px){body{padding:.75rem}header{flex-direction:column;gap:.35rem}nav.session{margin-left:0}\
table,tbody,tr,td{display:block;width:100%}table{background:transparent}tr.head{display:none}\
tr{background:var(--card);border:1px solid var(--line);border-radius:8px;margin:.5rem 0;padding:.35rem .6rem}\
td{border:0;padding:.15rem 0;overflow-wrap:anywhere}td[data-label]::before{content:attr(data-label);display:block;color:var(--muted);font-size:.8rem}}\
.notice{background:var(--card);border:1px solid var(--ok);color:var(--ok);border-radius:8px;padding:.5rem .75rem;margin:.75rem 0}\
td code{white-space:nowrap}\
";

/// HTML-escapes `text` (for element content and quoted attributes).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The `Content-Security-Policy` of a page whose forms may post to `form_action` sources.
pub fn page_csp(form_action: &[&str]) -> String {
    let hash = STANDARD.encode(Sha256::digest(STYLE.as_bytes()));
    let mut sources = vec!["'self'".to_owned()];
    sources.extend(form_action.iter().map(|s| (*s).to_owned()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; form-action {}; frame-ancestors 'none'; base-uri 'none'; report-uri /csp-report",
        sources.join(" ")
    )
}

/// [`page_csp`] with one same-origin script allowed (the console's `/console/live.js`) and
/// its same-origin connections (its event stream and the page it re-reads): still no inline
/// script, no `eval`, nothing from another origin.
pub fn scripted_page_csp(form_action: &[&str]) -> String {
    page_csp(form_action).replacen(
        "; form-action",
        "; script-src 'self'; connect-src 'self'; form-action",
        1,
    )
}

/// [`page`] under [`scripted_page_csp`]: for a page that loads its own same-origin script
/// and works without it.
pub fn scripted_page(
    status: StatusCode,
    title: &str,
    body: &str,
    form_action: &[&str],
) -> Response {
    let mut resp = page(status, title, body, form_action);
    if let Ok(v) = HeaderValue::from_str(&scripted_page_csp(form_action)) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

/// A whole page: `title`, `body` (already escaped HTML, its tables' cells labelled for a
/// narrow screen), under the page CSP.
pub fn page(status: StatusCode, title: &str, body: &str, form_action: &[&str]) -> Response {
    let body = labelled_tables(body);
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        esc(title)
    );
    let mut resp = (status, html).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&page_csp(form_action)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    // A page's forms post to its own origin, whose Origin check needs the header: under
    // `no-referrer` a browser sends `Origin: null` on every POST, so a real browser could
    // never submit. `same-origin` still sends no referrer to any other origin.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// A short page telling the person what went wrong.
pub fn message(status: StatusCode, title: &str, text: &str) -> Response {
    page(
        status,
        title,
        &format!("<h1>{}</h1><p>{}</p>", esc(title), esc(text)),
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn the_policy_allows_only_the_one_stylesheet() {
        let csp = page_csp(&["https://github.com"]);
        assert!(csp.starts_with("default-src 'none'; style-src 'sha256-"));
        assert!(csp.contains("form-action 'self' https://github.com"));
        assert!(csp.contains("frame-ancestors 'none'"));
        assert!(!csp.contains("script-src") && !csp.contains("unsafe-inline"));
        assert!(STYLE.contains("prefers-color-scheme: dark"));
        let scripted = scripted_page_csp(&[]);
        assert!(scripted.contains("script-src 'self'; connect-src 'self'; form-action 'self'"));
        assert!(!scripted.contains("unsafe-inline") && !scripted.contains("unsafe-eval"));
        assert!(scripted.starts_with("default-src 'none'; style-src 'sha256-"));
        assert!(!STYLE.contains("url("), "no external fonts or images");
    }
}

#[cfg(test)]
mod label_tests {
    use super::labelled_tables;

    #[test]
    fn each_cell_is_labelled_with_its_column_and_the_head_row_is_marked() {
        let html = "<p>x</p><table><tr><th>job</th><th>spent <em>of cap</em></th><th></th></tr>\
                    <tr><td><code>j1</code></td><td class=\"n\">$1</td><td><form><button>Fail</button></form></td></tr>\
                    <tr><td colspan=\"3\" class=\"muted\">No jobs.</td></tr></table><p>y</p>";
        assert_eq!(
            labelled_tables(html),
            "<p>x</p><table><tr class=\"head\"><th>job</th><th>spent <em>of cap</em></th><th></th></tr>\
             <tr><td data-label=\"job\"><code>j1</code></td><td data-label=\"spent of cap\" class=\"n\">$1</td><td><form><button>Fail</button></form></td></tr>\
             <tr><td colspan=\"3\" class=\"muted\">No jobs.</td></tr></table><p>y</p>"
        );
        assert_eq!(labelled_tables("no table"), "no table");
        assert_eq!(labelled_tables("<table><tr><td>a"), "<table><tr><td>a");
    }
}
