//! The log's paging cursor: opaque to callers (base64url of `{"b": <id>}`, the entry id the
//! next page starts below), so a bad or forged one is refused by name rather than read.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// The cursor of the page that starts below entry `before`.
pub fn encode(before: i64) -> String {
    URL_SAFE_NO_PAD.encode(json!({ "b": before }).to_string())
}

/// The entry id a cursor names, or a refusal naming the field.
pub fn decode(cursor: &str) -> Result<i64, String> {
    let refused = || {
        format!(
            "cursor: {cursor:?} is not a cursor this server issued; pass the next_cursor of the previous page, or none for the newest page"
        )
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor.trim_end_matches('='))
        .map_err(|_| refused())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| refused())?;
    match value.get("b").and_then(Value::as_i64) {
        Some(id) if id > 0 && value.as_object().is_some_and(|o| o.len() == 1) => Ok(id),
        _ => Err(refused()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bad_cursors_are_refused_by_name() {
        for bad in [
            "",
            "!!!",
            "bm90IGpzb24",
            &URL_SAFE_NO_PAD.encode("{\"b\":0}"),
            &URL_SAFE_NO_PAD.encode("{\"b\":-4}"),
            &URL_SAFE_NO_PAD.encode("{\"b\":\"7\"}"),
            &URL_SAFE_NO_PAD.encode("{\"b\":7,\"x\":1}"),
            &URL_SAFE_NO_PAD.encode("[7]"),
        ] {
            let err = decode(bad).unwrap_err();
            assert!(err.starts_with("cursor:"), "{err}");
        }
    }

    proptest! {
        #[test]
        fn cursors_round_trip(id in 1i64..i64::MAX) {
            prop_assert_eq!(decode(&encode(id)), Ok(id));
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,80}") {
            let _ = decode(&text);
        }
    }
}
