//! Timestamps in message logs: ISO strings or epoch seconds, and a clock that orders turns that carry none.

use super::*;

/// A monotonic clock in nanoseconds: synthetic ticks in log order, real time when known.
#[derive(Debug, Default)]
pub struct Clock {
    last: u64,
    /// Set when a real timestamp was earlier than the clock and had to be overridden.
    pub went_backwards: bool,
}

impl Clock {
    /// A tailed chunk's clock starts after everything earlier chunks can have used (a
    /// thousand ticks per line), so start order stays log order across chunks.
    pub fn for_input(input: &Input) -> Self {
        Clock {
            last: input.base_line.saturating_mul(1000),
            went_backwards: false,
        }
    }

    /// The start of the next record: its own timestamp if it has one and it is later than the
    /// previous record, else one nanosecond after the previous record.
    pub fn tick(&mut self, real: Option<u64>) -> u64 {
        match real {
            Some(t) if t > self.last => self.last = t,
            Some(_) => {
                self.went_backwards = true;
                self.last += 1;
            }
            None => self.last += 1,
        }
        self.last
    }
}

/// A timestamp to nanoseconds: an RFC 3339 string, or a number read as seconds,
/// milliseconds, microseconds or nanoseconds by magnitude (so `1760000000.5` and
/// `1760000000500` agree).
pub fn timestamp_nanos(value: &Value) -> Option<u64> {
    if let Some(text) = value.as_str() {
        return crate::formats::common::timestamp::rfc3339_nanos(text);
    }
    let n = value.as_f64().filter(|n| n.is_finite() && *n > 0.0)?;
    let nanos = if n < 1e11 {
        n * 1e9
    } else if n < 1e14 {
        n * 1e6
    } else if n < 1e17 {
        n * 1e3
    } else {
        n
    };
    (nanos < u64::MAX as f64).then_some(nanos.round() as u64)
}

/// A duration in seconds to nanoseconds.
pub fn seconds_nanos(value: &Value) -> Option<u64> {
    let s = value.as_f64().filter(|s| s.is_finite() && *s >= 0.0)?;
    let nanos = s * 1e9;
    (nanos < u64::MAX as f64).then_some(nanos.round() as u64)
}
