//! Time as text: libvirt's UTC timestamp, RFC 3339 for syslog, and the
//! parser of the times users give vlog-dump.

use super::bounded::Bounded;
use super::num::{decimal, put_decimal, put_digits};
use super::sink::Sink;

/// `YYYY-MM-DD HH:MM:SS.mmm+0000`, always UTC (libvirt's form).
pub fn put_timestamp(time_ns: u64, out: &mut impl Sink) {
    Clock::new().put_timestamp(time_ns, out);
}

/// The text of the last millisecond a timestamp showed: the lines of one
/// second (most lines, when a program logs much) make the calendar date
/// once, those of one millisecond (a burst) the whole text once. And the
/// last thread id's, which a burst's lines share too. Each writer of lines
/// keeps its own: the outputs under the printer's lock, a dump on its
/// stack.
#[derive(Debug)]
pub struct Clock {
    secs: u64,
    millis: u64,
    /// The date and time, then `.mmm+0000`.
    text: [u8; 48],
    /// How long the date and time are (at most 12 digits of year and 15
    /// bytes more: 32).
    len: usize,
    /// The last thread id put, and its digits (right-aligned).
    tid: Option<u32>,
    tid_text: [u8; 20],
    tid_len: usize,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

impl Clock {
    pub const fn new() -> Clock {
        Clock {
            secs: u64::MAX,
            millis: u64::MAX,
            text: [0; 48],
            len: 0,
            tid: None,
            tid_text: [0; 20],
            tid_len: 0,
        }
    }

    /// A thread id in decimal, made only when it is not the last one put.
    pub fn put_thread(&mut self, tid: u32, out: &mut impl Sink) {
        if self.tid != Some(tid) {
            self.tid_len = decimal(u64::from(tid), &mut self.tid_text).len();
            self.tid = Some(tid);
        }
        out.put(&self.tid_text[20 - self.tid_len..]);
    }

    /// [`put_timestamp`], with the second's date and time made only when the
    /// second changed, and the milliseconds when they did.
    pub fn put_timestamp(&mut self, time_ns: u64, out: &mut impl Sink) {
        const TAIL: &[u8; 9] = b".000+0000";
        let millis = time_ns / 1_000_000;
        if millis != self.millis {
            let secs = millis / 1000;
            if secs != self.secs {
                let mut buf = Bounded::new(&mut self.text[..32]);
                put_date_time(secs, b" ", &mut buf);
                self.len = buf.finish().len();
                self.text[self.len..self.len + TAIL.len()].copy_from_slice(TAIL);
                self.secs = secs;
            }
            put_digits(millis % 1000, &mut self.text[self.len + 1..self.len + 4]);
            self.millis = millis;
        }
        out.put(&self.text[..self.len + TAIL.len()]);
    }
}

/// `2026-11-30T13:45:12.345678Z` (RFC 3339 with microseconds, UTC).
pub fn put_rfc3339(time_ns: u64, out: &mut impl Sink) {
    put_date_time(time_ns / 1_000_000_000, b"T", out);
    out.put(b".");
    put_decimal((time_ns / 1000) % 1_000_000, 6, out);
    out.put(b"Z");
}

/// `YYYY-MM-DD` `between` `hh:mm:ss` of `secs` seconds since the epoch, UTC.
fn put_date_time(secs: u64, between: &[u8], out: &mut impl Sink) {
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    put_decimal(year as u64, 4, out);
    out.put(b"-");
    put_decimal(month as u64, 2, out);
    out.put(b"-");
    put_decimal(day as u64, 2, out);
    out.put(between);
    put_clock(secs % 86_400, out);
}

/// `Mmm dd hh:mm:ss` (RFC 3164, as glibc's syslog() writes it: the day
/// padded with a space).
pub fn put_rfc3164(time_ns: u64, out: &mut impl Sink) {
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let secs = time_ns / 1_000_000_000;
    let (_, month, day) = civil_from_days((secs / 86_400) as i64);
    out.put(MONTHS[month as usize - 1]);
    out.put(if day < 10 { b"  " } else { b" " });
    put_decimal(day as u64, 1, out);
    out.put(b" ");
    put_clock(secs % 86_400, out);
}

/// `hh:mm:ss` of `secs` seconds into the day.
fn put_clock(secs: u64, out: &mut impl Sink) {
    put_decimal(secs / 3600, 2, out);
    out.put(b":");
    put_decimal(secs / 60 % 60, 2, out);
    out.put(b":");
    put_decimal(secs % 60, 2, out);
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm), so no libc time call is needed.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) to days since 1970-01-01: the inverse of
/// `civil_from_days`.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses `YYYY-MM-DD HH:MM:SS[.fff]` (or with `T`), UTC, or `@SECONDS`, into
/// nanoseconds since the epoch.
pub fn parse_time(s: &str) -> Option<u64> {
    if let Some(secs) = s.strip_prefix('@') {
        return secs.parse::<u64>().ok()?.checked_mul(1_000_000_000);
    }
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u32>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut nanos = 0u64;
    if let Some(frac) = s.get(19..).filter(|f| !f.is_empty()) {
        let digits = frac.strip_prefix('.')?;
        if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|d| d.is_ascii_digit()) {
            return None;
        }
        nanos = digits.parse::<u64>().ok()? * 10u64.pow(9 - digits.len() as u32);
    }
    let days = days_from_civil(year as i64, month, day);
    let secs = days * 86_400 + (hour * 3600 + min * 60 + sec) as i64;
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_parsing() {
        assert_eq!(
            parse_time("2026-11-30 13:45:12.345"),
            Some(1_796_046_312_345_000_000)
        );
        assert_eq!(
            parse_time("2026-11-30T13:45:12"),
            Some(1_796_046_312_000_000_000)
        );
        assert_eq!(parse_time("@1796046312"), Some(1_796_046_312_000_000_000));
        for bad in [
            "",
            "2026-11-30",
            "2026-13-01 00:00:00",
            "2026-11-30 13:45:12.",
            "x",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
        for days in [-1000, 0, 11_016, 20_787, 100_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn a_kept_clock_writes_what_a_new_one_does() {
        let base = 1_796_046_312_345_678_901u64;
        let mut kept = Clock::new();
        // The same millisecond, the next, the next second, the last time
        // there is, back in time, and the millisecond before a second.
        for t in [
            base,
            base + 1,
            base + 1_000_000,
            base + 999_000_000,
            base + 1_000_000_000,
            u64::MAX,
            base - 86_400_000_000_000,
            1_796_046_312_999_999_999,
            1_796_046_313_000_000_000,
        ] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            kept.put_timestamp(t, &mut a);
            Clock::new().put_timestamp(t, &mut b);
            assert_eq!(
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b),
                "at {t}"
            );
        }
        let mut v = Vec::new();
        kept.put_timestamp(base, &mut v);
        assert_eq!(v, b"2026-11-30 13:45:12.345+0000");
        // Thread ids: the same, another, back, the extremes.
        for tid in [4242, 4242, 7, 4242, 0, u32::MAX, 0] {
            let mut v = Vec::new();
            kept.put_thread(tid, &mut v);
            assert_eq!(v, tid.to_string().as_bytes(), "tid {tid}");
        }
    }

    #[test]
    fn syslog_forms() {
        let mut v = Vec::new();
        // 2026-11-30 13:45:12.345678901 UTC, and 2026-12-05.
        put_rfc3339(1_796_046_312_345_678_901, &mut v);
        v.push(b'|');
        put_rfc3164(1_796_046_312_345_678_901, &mut v);
        v.push(b'|');
        put_rfc3164(1_796_046_312_345_678_901 + 5 * 86_400_000_000_000, &mut v);
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "2026-11-30T13:45:12.345678Z|Nov 30 13:45:12|Dec  5 13:45:12"
        );
    }
}
