//! Compact number formats for narrow columns.

/// `850µs`, `12ms`, `1.2s`, `2m03s`.
pub fn duration_ms(ms: f64) -> String {
    if !ms.is_finite() || ms < 0.0 {
        return "?".into();
    }
    if ms < 1.0 {
        format!("{:.0}µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.0}ms")
    } else if ms < 60_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        let secs = (ms / 1000.0) as u64;
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

/// `950`, `1.2k`, `3.4M`.
pub fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        format!("{:.1}M", n as f64 / 1e6)
    }
}

/// `512 B`, `1.5 KiB`, `2.0 MiB`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1 << 20 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    }
}

/// `2026-11-30 14:03:21` (UTC) from unix nanos; empty for 0.
pub fn clock(unix_nano: u64) -> String {
    if unix_nano == 0 {
        return String::new();
    }
    let secs = unix_nano / 1_000_000_000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_compact() {
        assert_eq!(duration_ms(0.5), "500µs");
        assert_eq!(duration_ms(340.0), "340ms");
        assert_eq!(duration_ms(1234.0), "1.2s");
        assert_eq!(duration_ms(123_000.0), "2m03s");
        assert_eq!(tokens(1234), "1.2k");
        assert_eq!(bytes(2048), "2.0 KiB");
        // 2024-02-29 12:34:56 UTC = 1709210096 s.
        assert_eq!(clock(1_709_210_096_000_000_000), "2024-02-29 12:34:56");
    }
}
