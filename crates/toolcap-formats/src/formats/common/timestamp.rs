//! Timestamps written as text. Every format reads them through [`rfc3339_nanos`], so a date
//! means the same instant whichever format it came from.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Parses an RFC 3339 timestamp (`2026-11-30T12:49:33.818158+00:00`, `…Z`) into unix
/// nanoseconds. Parsing is strict: a date that does not exist (February 31st), a missing
/// offset or a malformed field is no timestamp, and neither is one before 1970.
pub fn rfc3339_nanos(text: &str) -> Option<u64> {
    let parsed = OffsetDateTime::parse(text.trim(), &Rfc3339).ok()?;
    u64::try_from(parsed.unix_timestamp_nanos()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_forms_parse_to_the_instants_the_hand_written_parser_gave() {
        // Fractional seconds of any length, `Z` and numeric offsets, as the fixtures write them.
        for (text, nanos) in [
            ("1970-01-01T00:00:00Z", 0),
            ("1970-01-01T00:00:01.5+00:00", 1_500_000_000),
            ("1970-01-01T01:00:00+01:00", 0),
            ("1969-12-31T19:00:00-05:00", 0),
            // 2026-11-30T12:49:33Z, checked with `date -u -d ... +%s`.
            (
                "2026-11-30T12:49:33.818158+00:00",
                1_796_042_973_818_158_000,
            ),
            (
                "2026-11-30T13:49:33.818158+01:00",
                1_796_042_973_818_158_000,
            ),
            ("2026-11-30T12:49:33.818Z", 1_796_042_973_818_000_000),
            ("2026-11-30T12:49:33Z", 1_796_042_973_000_000_000),
            (" 2026-11-30T12:49:33z ", 1_796_042_973_000_000_000),
            ("2025-10-09T08:53:20.5Z", 1_760_000_000_500_000_000),
        ] {
            assert_eq!(rfc3339_nanos(text), Some(nanos), "{text}");
        }
    }

    #[test]
    fn dates_that_do_not_exist_and_malformed_text_are_refused() {
        for text in [
            "2026-02-31T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T12:00:00+00:00",
            "2026-13-01T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T12:60:00Z",
            "2026-11-30T12:49:33",
            "2026-11-30T12:49:33+0000",
            "2026-11-30",
            "1969-12-31T23:59:59Z",
            "not a date",
            "",
        ] {
            assert_eq!(rfc3339_nanos(text), None, "{text}");
        }
        assert!(
            rfc3339_nanos("2024-02-29T00:00:00Z").is_some(),
            "a leap day exists"
        );
    }
}
