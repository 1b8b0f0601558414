//! The pkt-line command list at the start of a `git-receive-pack` request body: the ref
//! updates a push asks for, read before git sees the body.

use capsid_core::drive::push_policy::RefUpdate;

/// The longest command list read before the pack (a push naming thousands of refs fits).
pub(super) const COMMANDS_MAX: usize = 1024 * 1024;

/// A push's ref updates: the pkt-line command list at the start of a `git-receive-pack`
/// body (`[shallow <oid>]* <old> <new> <ref>\0<caps> ... 0000`), and where it ends.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Commands {
    /// More bytes are needed.
    Incomplete,
    /// The updates (none: git's probe before a chunked push).
    Read(Vec<RefUpdate>),
}

/// Reads the command list; an error is a sentence saying what is wrong with the body.
pub(super) fn parse_commands(buf: &[u8]) -> Result<Commands, String> {
    let mut at = 0;
    let mut updates = Vec::new();
    loop {
        let Some(head) = buf.get(at..at + 4) else {
            return Ok(Commands::Incomplete);
        };
        let len = std::str::from_utf8(head)
            .ok()
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or("the push's command list is not pkt-line framed")?;
        if len == 0 {
            // An empty list is git's probe before a large chunked push (`0000` alone); git
            // updates nothing for it.
            return Ok(Commands::Read(updates));
        }
        if len < 5 {
            return Err(format!(
                "the push's command list holds a pkt-line of length {len}"
            ));
        }
        let Some(payload) = buf.get(at + 4..at + len) else {
            return Ok(Commands::Incomplete);
        };
        at += len;
        let payload = payload.strip_suffix(b"\n").unwrap_or(payload);
        let (line, caps) = match payload.iter().position(|&b| b == 0) {
            Some(nul) if updates.is_empty() => (&payload[..nul], true),
            Some(_) => return Err("a command after the first carries capabilities".to_owned()),
            None => (payload, false),
        };
        let line = std::str::from_utf8(line).map_err(|_| "a command is not UTF-8".to_owned())?;
        if updates.is_empty() && !caps && line.starts_with("shallow ") {
            continue;
        }
        if line.starts_with("push-cert") {
            return Err("signed pushes (push certificates) are not taken".to_owned());
        }
        let mut parts = line.splitn(3, ' ');
        let (Some(old), Some(new), Some(refname)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("{line:?} is not `<old> <new> <ref>`"));
        };
        updates.push(RefUpdate::parse(old, new, refname).map_err(|e| e.to_string())?);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const Z: &str = "0000000000000000000000000000000000000000";

    fn pkt(s: &str) -> Vec<u8> {
        let mut out = format!("{:04x}", s.len() + 4).into_bytes();
        out.extend_from_slice(s.as_bytes());
        out
    }

    #[test]
    fn reads_the_command_list_and_stops_at_the_flush() {
        let mut body = pkt(&format!(
            "{Z} {A} refs/heads/x\0report-status side-band-64k\n"
        ));
        body.extend(pkt(&format!("{A} {Z} refs/heads/y\n")));
        assert_eq!(parse_commands(&body), Ok(Commands::Incomplete));
        body.extend(b"0000PACK...");
        let Ok(Commands::Read(updates)) = parse_commands(&body) else {
            panic!("not read");
        };
        assert_eq!(updates.len(), 2);
        assert_eq!(updates[0].refname, "refs/heads/x");
        assert_eq!(updates[1].to_string(), format!("{A} {Z} refs/heads/y"));
    }

    #[test]
    fn shallow_lines_before_the_commands_are_skipped() {
        let mut body = pkt(&format!("shallow {A}\n"));
        body.extend(pkt(&format!("{Z} {A} refs/heads/x\0caps\n")));
        body.extend(b"0000");
        assert!(matches!(parse_commands(&body), Ok(Commands::Read(u)) if u.len() == 1));
    }

    #[test]
    fn a_body_that_is_not_a_command_list_is_refused() {
        assert_eq!(parse_commands(b"0000"), Ok(Commands::Read(Vec::new())));
        let cases: Vec<Vec<u8>> = vec![
            b"zzzz".to_vec(),
            b"0003".to_vec(),
            b"\x1f\x8b\x08\x00gzip".to_vec(),
            pkt("push-cert\0caps\n"),
            pkt(&format!("{Z} {A}\n")),
            pkt(&format!("{Z} nothex refs/heads/x\n")),
            [
                pkt(&format!("{Z} {A} refs/heads/x\n")),
                pkt(&format!("{Z} {A} refs/heads/y\0c\n")),
            ]
            .concat(),
        ];
        for body in cases {
            assert!(parse_commands(&body).is_err(), "{body:?}");
        }
    }
}
