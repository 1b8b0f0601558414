//! Time as the core sees it: a UTC instant with millisecond precision, and the `Clock` port.
//!
//! The core never reads a clock itself. Every rule that depends on "now" (leases, expiries,
//! durations, "updated within the last hour") takes a [`Timestamp`] from a [`Clock`].
//! Timestamps are rendered as fixed-width RFC 3339 strings (`2026-11-30T04:09:01.123Z`),
//! so their lexicographic order is their time order in every store.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// A UTC instant, counted in milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Milliseconds in common spans, for readable arithmetic.
pub const SECOND_MS: i64 = 1_000;
/// One minute in milliseconds.
pub const MINUTE_MS: i64 = 60 * SECOND_MS;
/// One hour in milliseconds.
pub const HOUR_MS: i64 = 60 * MINUTE_MS;
/// One day in milliseconds.
pub const DAY_MS: i64 = 24 * HOUR_MS;

// Timestamps outside years 1..=9999 cannot be rendered in the fixed-width form.
const MIN_MS: i64 = -62_135_596_800_000; // 0001-01-01T00:00:00Z
const MAX_MS: i64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

impl Timestamp {
    /// The instant `ms` milliseconds after the Unix epoch, clamped to years 1..=9999.
    pub fn from_millis(ms: i64) -> Self {
        Self(ms.clamp(MIN_MS, MAX_MS))
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millis(self) -> i64 {
        self.0
    }

    /// This instant moved by `ms` milliseconds (saturating at the representable range).
    pub fn plus_millis(self, ms: i64) -> Self {
        Self::from_millis(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self` (negative when `earlier` is later).
    pub fn millis_since(self, earlier: Timestamp) -> i64 {
        self.0 - earlier.0
    }

    /// Parses RFC 3339 (`2026-11-30T04:09:01Z`, with or without fraction or offset) and the
    /// SQLite `datetime('now')` form (`2026-11-30 04:09:01`, read as UTC). `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(dt) = OffsetDateTime::parse(text, &Rfc3339) {
            return Some(Self::from_datetime(dt));
        }
        let sqlite =
            time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
        PrimitiveDateTime::parse(text, sqlite)
            .ok()
            .map(|p| Self::from_datetime(p.assume_offset(UtcOffset::UTC)))
    }

    fn from_datetime(dt: OffsetDateTime) -> Self {
        let ms = dt.unix_timestamp_nanos() / 1_000_000;
        Self::from_millis(i64::try_from(ms).unwrap_or(if ms < 0 { MIN_MS } else { MAX_MS }))
    }

    fn to_datetime(self) -> OffsetDateTime {
        // In range by construction (see `from_millis`).
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    /// The calendar date, `YYYY-MM-DD` (UTC).
    pub fn date(self) -> String {
        self.to_string()[..10].to_owned()
    }

    /// The calendar month, `YYYY-MM` (UTC).
    pub fn month(self) -> String {
        self.to_string()[..7].to_owned()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dt = self.to_datetime();
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second(),
            dt.millisecond()
        )
    }
}

/// Serialized as its fixed-width RFC 3339 form, so a typed field renders exactly as the
/// string it replaced.
impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read from any form [`Timestamp::parse`] accepts; anything else is refused, never defaulted.
impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Timestamp::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{}' is not an RFC 3339 instant",
                text.chars().take(40).collect::<String>()
            ))
        })
    }
}

/// The source of "now". Adapters read the system clock; tests drive a [`ManualClock`].
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// A clock that only moves when told to: for tests and simulations.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self(AtomicI64::new(start.as_millis()))
    }

    /// Moves the clock forward (or back, with a negative span) by `ms` milliseconds.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: Timestamp) {
        self.0.store(at.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// A timestamp on the wire is its text (see `Display`).
impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn serde_carries_the_fixed_width_form() {
        let at = Timestamp::parse("2026-11-30T04:09:01.123Z").expect("instant");
        assert_eq!(
            serde_json::to_value(at).expect("serializes"),
            serde_json::json!("2026-11-30T04:09:01.123Z")
        );
        let back: Timestamp =
            serde_json::from_value(serde_json::to_value(at).expect("serializes")).expect("reads");
        assert_eq!(back, at, "what is written reads back as the same instant");
        let sqlite: Timestamp =
            serde_json::from_value(serde_json::json!("2026-11-30 04:09:01")).expect("sqlite form");
        assert_eq!(sqlite.to_string(), "2026-11-30T04:09:01.000Z");
        let err = serde_json::from_value::<Timestamp>(serde_json::json!("yesterday"))
            .expect_err("not an instant");
        assert!(
            err.to_string()
                .contains("'yesterday' is not an RFC 3339 instant")
        );
    }

    #[test]
    fn renders_fixed_width_rfc3339() {
        let t = Timestamp::parse("2026-11-30T04:09:01.123Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-30T04:09:01.123Z");
        assert_eq!(
            Timestamp::from_millis(0).to_string(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(t.date(), "2026-11-30");
        assert_eq!(t.month(), "2026-11");
    }

    #[test]
    fn reads_sqlite_datetime_as_utc() {
        let t = Timestamp::parse("2026-11-30 04:09:01").unwrap();
        assert_eq!(t.to_string(), "2026-11-30T04:09:01.000Z");
        assert_eq!(Timestamp::parse("2026-11-30T06:09:01+02:00"), Some(t));
        assert_eq!(Timestamp::parse("yesterday"), None);
        assert_eq!(Timestamp::parse(""), None);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp::from_millis(1_000));
        assert_eq!(c.now().as_millis(), 1_000);
        c.advance(HOUR_MS);
        assert_eq!(c.now().as_millis(), 1_000 + HOUR_MS);
    }

    proptest! {
        #[test]
        fn text_order_is_time_order(a in MIN_MS..MAX_MS, b in MIN_MS..MAX_MS) {
            let (ta, tb) = (Timestamp::from_millis(a), Timestamp::from_millis(b));
            prop_assert_eq!(ta.cmp(&tb), ta.to_string().cmp(&tb.to_string()));
            prop_assert_eq!(Timestamp::parse(&ta.to_string()), Some(ta));
        }
    }
}
