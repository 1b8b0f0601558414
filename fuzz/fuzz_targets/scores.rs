//! `improve/scores.md`: the Anchors and Secondary sections and the Anchors checksum. Never
//! panics, and the checksum ignores CRLF line endings as the reference says.
#![no_main]

use capsid_core::improve::anchors::{anchors_block, anchors_checksum};
use capsid_core::improve::parse_scores;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_scores(text);
    let _ = anchors_block(text);
    if !text.contains('\r') {
        assert_eq!(
            anchors_checksum(text),
            anchors_checksum(&text.replace('\n', "\r\n"))
        );
    }
});
