//! Codex's edits: a shell command that is exactly one `apply_patch` heredoc (`apply_patch
//! <<'EOF'` ... `EOF`, what Codex runs to add, change, move or delete files) is an edit, as
//! Claude Code's `Write` is, not a shell command whose words are read for pushes: the patch's
//! text is the files' content. Anything else on the line (a command before or after the
//! heredoc, a second heredoc, text past its end) makes it an ordinary shell command again.

/// The paths an `apply_patch` command edits (added, updated, deleted and moved-to, in the
/// patch's order), when `line` is exactly one `apply_patch` heredoc; `None` otherwise.
pub fn apply_patch_paths(line: &str) -> Option<Vec<String>> {
    let text = line.trim();
    let (first, rest) = text.split_once('\n')?;
    let opener = first.trim().strip_prefix("apply_patch")?;
    let delimiter = opener.trim_start().strip_prefix("<<")?.trim();
    let delimiter = delimiter
        .strip_prefix('\'')
        .and_then(|d| d.strip_suffix('\''))
        .or_else(|| {
            delimiter
                .strip_prefix('"')
                .and_then(|d| d.strip_suffix('"'))
        })
        .unwrap_or(delimiter);
    if delimiter.is_empty()
        || !delimiter
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let (body, last) = rest.rsplit_once('\n')?;
    if last.trim() != delimiter {
        return None;
    }
    let mut lines = body.lines();
    if lines.next().map(str::trim) != Some("*** Begin Patch") {
        return None;
    }
    let mut paths = Vec::new();
    let mut ended = false;
    for l in lines {
        if ended || l.trim() == delimiter {
            // Past the patch's end, or the heredoc closed early: not one heredoc.
            return None;
        }
        if l.trim() == "*** End Patch" {
            ended = true;
            continue;
        }
        for marker in [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ] {
            if let Some(p) = l.strip_prefix(marker) {
                paths.push(p.trim().to_owned());
            }
        }
    }
    ended.then_some(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: a.sh\n+git push origin HEAD:main\n*** Update File: src/b.rs\n@@\n-x\n+y\n*** Move to: src/c.rs\n*** Delete File: old.txt\n*** End Patch\nPATCH";

    #[test]
    fn one_heredoc_is_an_edit_of_the_files_it_names() {
        assert_eq!(
            apply_patch_paths(PATCH),
            Some(vec![
                "a.sh".to_owned(),
                "src/b.rs".to_owned(),
                "src/c.rs".to_owned(),
                "old.txt".to_owned()
            ])
        );
        let plain = PATCH.replace("<<'PATCH'", "<<PATCH");
        assert_eq!(apply_patch_paths(&plain).map(|p| p.len()), Some(4));
        let double = PATCH.replace("<<'PATCH'", "<< \"PATCH\"");
        assert_eq!(apply_patch_paths(&double).map(|p| p.len()), Some(4));
    }

    #[test]
    fn anything_more_on_the_line_is_a_shell_command() {
        for line in [
            "git push origin HEAD:main",
            &format!("{PATCH}\ngit push origin HEAD:main"),
            &format!("{PATCH}; git push origin HEAD:main"),
            &format!("cd /x && {PATCH}"),
            &PATCH.replace("apply_patch <<'PATCH'", "apply_patch <<'PATCH' && git push"),
            &PATCH.replace("*** Begin Patch", "echo hi"),
            &PATCH.replace("*** End Patch\n", ""),
            &PATCH.replace("*** End Patch\n", "*** End Patch\nextra\n"),
            &PATCH.replace("+git push", "PATCH\ngit push"),
            &PATCH.replace("<<'PATCH'", "<<'P;T'"),
            &PATCH.replace("<<'PATCH'", "<<''"),
            "apply_patch <<'PATCH'",
            "apply_patch file.patch\nPATCH",
        ] {
            assert_eq!(apply_patch_paths(line), None, "{line}");
        }
    }
}
