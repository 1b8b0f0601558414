//! Keys to `object_store` paths and back: each `/`-separated segment percent-encoded the way
//! `object_store` encodes a path part (so `%` itself is encoded), and decoded on the way out.

use capsid_core::ports::BlobError;
use object_store::path::{Path, PathPart};
use percent_encoding::percent_decode_str;

/// The path of `key`. A key with an empty segment (leading, trailing or doubled `/`) names
/// no object.
pub fn path_of_key(key: &str) -> Result<Path, BlobError> {
    if key.is_empty() || key.split('/').any(str::is_empty) {
        return Err(BlobError::InvalidKey(key.to_owned()));
    }
    Ok(Path::from_iter(key.split('/').map(PathPart::from)))
}

/// The key a listed path stands for.
pub fn key_of_path(path: &Path) -> String {
    path.parts()
        .map(|part| {
            percent_decode_str(part.as_ref())
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_paths() {
        for key in [
            "backups/json/2026-03-01T09-00-00-000Z/documents.json",
            "backups/markdown/ns%2Fx/a/./b#c [d] 100%.md",
            "backups/markdown/ns/naïve ☃/?*~.md",
        ] {
            let path = path_of_key(key).expect("a valid key");
            assert_eq!(key_of_path(&path), key);
        }
        assert!(path_of_key("").is_err());
        assert!(path_of_key("a//b").is_err());
        assert!(path_of_key("/a").is_err());
        assert!(path_of_key("a/").is_err());
        // A `..` segment is encoded, so it never climbs out of the store's folder.
        let path = path_of_key("backups/../x").expect("encoded");
        assert!(!path.as_ref().contains("/../"));
    }
}
