//! Count claims (reference 2.2, `authoritative_counts` / `count_claims`): numbers stated in
//! standing prose ("30 tools", "11 live gates") checked against the artifact's own counts.
//! Flag only: the claims go back to a human to judge, nothing rewrites a document.
//!
//! The patterns are the Worker's (`src/counts.ts`), with JavaScript's ASCII `\d` and `\b`.
//! Only a namespace with authoritative numbers of its own is scanned.

use std::sync::LazyLock;

use regex::{Match, Regex};
use serde::Serialize;

use super::document::Document;
use super::{JS_SPACE_CLASS, is_archived, is_js_space};

/// The artifact's own counts that prose about it is held to. Serialized with the Worker's
/// field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthoritativeCounts {
    /// Tools the server registers.
    pub tools: usize,
    /// Checks the live gate runs.
    pub live_gates: usize,
    /// Security headers enforced on HTML.
    pub html_enforced_headers: usize,
    /// Security headers shipped Report-Only on HTML.
    pub html_report_only_headers: usize,
}

/// The namespace whose documents describe this artifact. Every other namespace has no
/// authoritative numbers and gets no claims, rather than being measured against Capsid's.
pub const ARTIFACT_NAMESPACE: &str = super::CAPSID_NAMESPACE;

/// `authoritativeFor`: `counts` for the artifact's namespace, nothing for any other.
pub fn authoritative_for(
    namespace: &str,
    counts: AuthoritativeCounts,
) -> Option<AuthoritativeCounts> {
    (namespace == ARTIFACT_NAMESPACE).then_some(counts)
}

/// A number in prose that disagrees with the artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CountClaim {
    /// The document stating it.
    pub path: String,
    /// Its type.
    #[serde(rename = "type")]
    pub doc_type: String,
    /// What is counted (`tools`, `live gates`, `security headers`).
    pub noun: String,
    /// The sentence around the number, whitespace collapsed.
    pub quote: String,
    /// What the prose states.
    pub states: String,
    /// What the artifact says.
    pub authoritative: String,
    /// Why this form was flagged, when it needs saying.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Standing-claim types; episodics and decisions are history, their numbers were right
/// when written.
const LINTED_TYPES: [&str; 7] = [
    "core",
    "concept",
    "semantic",
    "procedural",
    "spec",
    "reference",
    "protocol",
];

struct Patterns {
    year: Regex,
    decision_volume: Regex,
    of_tools: [Regex; 2],
    to_tools: [Regex; 2],
    plain_tools: [Regex; 2],
    subset_prefix: Regex,
    of_gates: Regex,
    plain_gates: Regex,
    gates_outcome: Regex,
    all_seven: Regex,
    header_context: Regex,
}

static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    let s = format!("[{JS_SPACE_CLASS}]");
    let b = r"(?-u:\b)";
    // Every pattern but the two anchored ones below carries the Worker's `i` flag.
    let re = |source: String| Regex::new(&format!("(?i){source}")).ok();
    Some(Patterns {
        year: Regex::new(r"^(?:19|20)[0-9]{2}$").ok()?,
        decision_volume: Regex::new(r"^decisions-vol-[0-9]+\.md$").ok()?,
        of_tools: [
            re(format!(r"([0-9]+){s}*(?:of|/){s}*([0-9]+){s}+tools{b}"))?,
            re(format!(r"tools?{s}*\(([0-9]+){s}*(?:of|/){s}*([0-9]+)\)"))?,
        ],
        to_tools: [
            re(format!(r"([0-9]+){s}+to{s}+([0-9]+){s}+tools{b}"))?,
            re(format!(
                r"tool surface[^.\n]*?{b}([0-9]+){s}+to{s}+([0-9]+){b}"
            ))?,
        ],
        plain_tools: [
            re(format!(r"([0-9]+){s}+tools{b}"))?,
            re(format!(r"tool surface[^.\n]*?{b}([0-9]+){b}"))?,
        ],
        subset_prefix: re(format!(
            r"{b}(?:other|others|remaining|rest|read-open|read open|gated|write-gated|ungated|only|another|of those|of these|first|last){b}[^.\n]{{0,12}}$"
        ))?,
        of_gates: re(format!(r"([0-9]+){s}*(?:of|/){s}*([0-9]+){s}+gates?{b}"))?,
        plain_gates: re(format!(r"{b}([0-9]+){s}+(?:live{s}+)?gates{b}"))?,
        // The Worker's negative lookahead `(?!\s*(?:passed|failed))`, applied after the match.
        gates_outcome: re(format!(r"^{s}*(?:passed|failed)"))?,
        all_seven: re(format!(r"all seven{b}[^.\n]*"))?,
        header_context: re(format!(
            r"header|security-policy|{b}CSP{b}|{b}HSTS{b}|nosniff|Referrer-Policy|X-Frame-Options|Permissions-Policy|COOP"
        ))?,
    })
});

/// Byte offset `units` UTF-16 code units before (negative) or after `from`, clamped to the
/// text and to character boundaries, so windows measured in the Worker's units stay valid.
fn utf16_offset(text: &str, from: usize, units: isize) -> usize {
    let mut pos = from;
    let mut left = units.unsigned_abs();
    if units < 0 {
        for c in text[..from].chars().rev() {
            if left < c.len_utf16() {
                break;
            }
            left -= c.len_utf16();
            pos -= c.len_utf8();
        }
    } else {
        for c in text[from..].chars() {
            if left < c.len_utf16() {
                break;
            }
            left -= c.len_utf16();
            pos += c.len_utf8();
        }
    }
    pos
}

/// Up to 40 units either side of the match, whitespace runs collapsed to one space, `...`
/// where cut.
fn quote_around(body: &str, m: &Match<'_>) -> String {
    let start = utf16_offset(body, m.start(), -40);
    let end = utf16_offset(body, m.end(), 40);
    let mut quote = String::with_capacity(end - start + 6);
    if start > 0 {
        quote.push_str("...");
    }
    let mut in_space = false;
    for c in body[start..end].chars() {
        if is_js_space(c) {
            if !in_space {
                quote.push(' ');
            }
            in_space = true;
        } else {
            quote.push(c);
            in_space = false;
        }
    }
    if end < body.len() {
        quote.push_str("...");
    }
    quote
}

struct Scan<'a> {
    p: &'a Patterns,
    doc: &'a Document,
    body: &'a str,
    claims: Vec<CountClaim>,
}

impl Scan<'_> {
    fn flag(
        &mut self,
        noun: &str,
        m: &Match<'_>,
        states: &str,
        authoritative: &str,
        note: Option<&str>,
    ) {
        if states == authoritative {
            return;
        }
        self.claims.push(CountClaim {
            path: self.doc.path.clone(),
            doc_type: self.doc.doc_type.clone(),
            noun: noun.to_owned(),
            quote: quote_around(self.body, m),
            states: states.to_owned(),
            authoritative: authoritative.to_owned(),
            note: note.map(str::to_owned),
        });
    }

    fn is_year(&self, number: &str) -> bool {
        self.p.year.is_match(number)
    }

    fn run(&mut self, counts: &AuthoritativeCounts) {
        let (p, body) = (self.p, self.body);
        let tools = counts.tools.to_string();
        // Three passes over tool counts; the first two consume what they match so the
        // third cannot read the same numbers as something else.
        let mut consumed: Vec<(usize, usize)> = Vec::new();
        for re in &p.of_tools {
            for caps in re.captures_iter(body) {
                let (Some(m), Some(subset), Some(total)) = (caps.get(0), caps.get(1), caps.get(2))
                else {
                    continue;
                };
                consumed.push((m.start(), m.end()));
                let (subset, total) = (subset.as_str(), total.as_str());
                if bigger(subset, total) {
                    self.flag(
                        "tools",
                        &m,
                        &format!("{subset} of {total}"),
                        "a subset cannot exceed its total",
                        Some("internal contradiction: the subset is larger than the total it is drawn from"),
                    );
                }
                if !self.is_year(total) {
                    self.flag("tools", &m, total, &tools, None);
                }
            }
        }
        for re in &p.to_tools {
            for caps in re.captures_iter(body) {
                let (Some(m), Some(resulting)) = (caps.get(0), caps.get(2)) else {
                    continue;
                };
                consumed.push((m.start(), m.end()));
                if !self.is_year(resulting.as_str()) {
                    self.flag("tools", &m, resulting.as_str(), &tools, None);
                }
            }
        }
        for re in &p.plain_tools {
            for caps in re.captures_iter(body) {
                let (Some(m), Some(number)) = (caps.get(0), caps.get(1)) else {
                    continue;
                };
                if consumed
                    .iter()
                    .any(|&(a, b)| m.start() >= a && m.start() < b)
                    || self.is_year(number.as_str())
                {
                    continue;
                }
                // The Worker locates the number by its first occurrence inside the match.
                let number_at = m.start() + m.as_str().find(number.as_str()).unwrap_or(0);
                let window = &body[utf16_offset(body, number_at, -40)..number_at];
                if p.subset_prefix.is_match(window) {
                    continue;
                }
                self.flag("tools", &m, number.as_str(), &tools, None);
            }
        }

        let gates = counts.live_gates.to_string();
        for caps in p.of_gates.captures_iter(body) {
            let (Some(m), Some(total)) = (caps.get(0), caps.get(2)) else {
                continue;
            };
            if !self.is_year(total.as_str()) {
                self.flag(
                    "live gates",
                    &m,
                    total.as_str(),
                    &gates,
                    Some("the total, not the number that passed"),
                );
            }
        }
        for caps in p.plain_gates.captures_iter(body) {
            let (Some(m), Some(number)) = (caps.get(0), caps.get(1)) else {
                continue;
            };
            if p.gates_outcome.is_match(&body[m.end()..]) || self.is_year(number.as_str()) {
                continue;
            }
            self.flag("live gates", &m, number.as_str(), &gates, None);
        }

        // "all seven" is a header claim only in header context.
        let headers = format!(
            "{} enforced plus {} Report-Only",
            counts.html_enforced_headers, counts.html_report_only_headers
        );
        for m in p.all_seven.find_iter(body) {
            let around =
                &body[utf16_offset(body, m.start(), -200)..utf16_offset(body, m.end(), 200)];
            if !p.header_context.is_match(around) {
                continue;
            }
            self.flag(
                "security headers",
                &m,
                "all seven",
                &headers,
                Some("COOP ships Report-Only pending a demonstrated case and a ruling, so 'all seven enforced' overstates what is live"),
            );
        }
    }
}

/// Whether decimal `a` is larger than decimal `b` (both digit strings of any length).
fn bigger(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    (a.len(), a) > (b.len(), b)
}

/// `scanCountClaims`: the count claims in the standing documents of a namespace whose
/// authoritative counts are `authoritative` (`None`: no claims). Archived documents, types
/// that record history, and the closed `decisions-vol-N.md` volumes are skipped.
pub fn scan_count_claims(
    docs: &[Document],
    authoritative: Option<&AuthoritativeCounts>,
) -> Vec<CountClaim> {
    let (Some(counts), Some(p)) = (authoritative, PATTERNS.as_ref()) else {
        return Vec::new();
    };
    let mut claims = Vec::new();
    for doc in docs {
        if !LINTED_TYPES.contains(&doc.doc_type.as_str())
            || is_archived(&doc.path)
            || p.decision_volume.is_match(&doc.path)
        {
            continue;
        }
        let mut scan = Scan {
            p,
            doc,
            body: doc.body_text(),
            claims: Vec::new(),
        };
        scan.run(counts);
        claims.append(&mut scan.claims);
    }
    claims
}

#[cfg(test)]
mod tests;
