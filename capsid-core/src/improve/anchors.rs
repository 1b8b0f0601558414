//! The Anchors block of `improve/scores.md` and its checksum (reference 8.3).
//!
//! The checksum covers only the Anchors block, so secondary weights stay tunable while the
//! hard requirements are pinned by a human.

use crate::crypto::sha256_hex;

/// The Anchors block: from the `## Anchors` heading through the line before the next `## `
/// heading, CRLF normalised to LF, trailing blank lines dropped. `None` without the heading.
pub fn anchors_block(scores_md: &str) -> Option<String> {
    let text = scores_md.replace("\r\n", "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end().eq_ignore_ascii_case("## anchors"))?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(lines.len(), |i| start + 1 + i);
    let mut block = lines[start..end].to_vec();
    while block.last().is_some_and(|l| l.trim().is_empty()) {
        block.pop();
    }
    Some(block.join("\n"))
}

/// SHA-256 hex of the Anchors block; a document without one hashes as the empty block.
pub fn anchors_checksum(scores_md: &str) -> String {
    sha256_hex(anchors_block(scores_md).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_spans_heading_to_next_section() {
        let doc = "intro\r\n## Anchors\r\n- a: required\r\n- b: min 2\r\n\r\n## Secondary\r\n- c: maximize weight 1\r\n";
        assert_eq!(
            anchors_block(doc).unwrap(),
            "## Anchors\n- a: required\n- b: min 2"
        );
        assert_eq!(
            anchors_checksum(doc),
            anchors_checksum(&doc.replace("\r\n", "\n")),
            "CRLF-insensitive"
        );
        assert_eq!(anchors_block("no anchors here"), None);
    }
}
