//! A clock read from a file, for tests that drive several `capsid serve` processes through one
//! shared "now" (hidden flag `--test-clock-file`, env `CAPSID_TEST_CLOCK_FILE`). The file
//! holds milliseconds since the Unix epoch; a test moves time by rewriting it, so leases and
//! the scheduler's cadence expire without anyone sleeping. Never for production: the server
//! logs a warning at start when it is on.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};

use capsid_core::time::{Clock, Timestamp};

use capsid_http::system::SystemClock;

/// "Now" is the number in a file; the last good reading stands while the file is being
/// rewritten or does not parse.
#[derive(Debug)]
pub struct FileClock {
    path: PathBuf,
    last: AtomicI64,
}

impl FileClock {
    /// A clock over `path`, starting from the system time until the file is readable.
    pub fn new(path: PathBuf) -> FileClock {
        let start = SystemClock.now().as_millis();
        let clock = FileClock {
            path,
            last: AtomicI64::new(start),
        };
        clock.now();
        clock
    }
}

impl Clock for FileClock {
    fn now(&self) -> Timestamp {
        let read = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok());
        match read {
            Some(ms) => {
                self.last.store(ms, Ordering::Relaxed);
                Timestamp::from_millis(ms)
            }
            None => Timestamp::from_millis(self.last.load(Ordering::Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_file_and_keeps_the_last_good_value() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("now");
        std::fs::write(&path, "1000000").unwrap();
        let clock = FileClock::new(path.clone());
        assert_eq!(clock.now().as_millis(), 1_000_000);
        std::fs::write(&path, "1300000\n").unwrap();
        assert_eq!(clock.now().as_millis(), 1_300_000);
        std::fs::write(&path, "half-written").unwrap();
        assert_eq!(clock.now().as_millis(), 1_300_000);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(clock.now().as_millis(), 1_300_000);
    }
}
