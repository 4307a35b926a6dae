//! `VLOG_RATELIMIT`: a rate limit for every call site that has none of its
//! own, from a priority up: `[PRIO:]BURST/SECONDS` (all priorities when
//! PRIO is left out), or `off`.

use crate::error::ConfigError;
use crate::priority::Priority;

/// The most a rate limit lets through per interval (`site::BURST_MAX`).
pub const BURST_MAX: u32 = 1_000_000;
/// The longest interval, a day.
pub const SECONDS_MAX: u32 = 86_400;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Messages of this priority and up are limited.
    pub from: Priority,
    pub burst: u32,
    pub seconds: u32,
}

impl RateLimit {
    /// None for `off`.
    pub fn parse(s: &str) -> Result<Option<RateLimit>, ConfigError> {
        let s = s.trim_matches(' ');
        if s == "off" {
            return Ok(None);
        }
        let bad = |why: &str| {
            ConfigError::new(format!(
                "invalid rate limit '{s}': {why} (use [PRIO:]BURST/SECONDS, as 3:10/5, or off)"
            ))
        };
        let (from, rest) = match s.split_once(':') {
            Some((prio, rest)) => (
                Priority::parse_field(prio)
                    .ok_or_else(|| bad(&format!("the priority is not {}", Priority::ACCEPTED)))?,
                rest,
            ),
            None => (Priority::Debug, s),
        };
        let (burst, seconds) = rest
            .split_once('/')
            .ok_or_else(|| bad("no '/' between the burst and the seconds"))?;
        let burst = number(burst)
            .filter(|n| (1..=BURST_MAX).contains(n))
            .ok_or_else(|| bad(&format!("the burst is not a number from 1 to {BURST_MAX}")))?;
        let seconds = number(seconds)
            .filter(|n| (1..=SECONDS_MAX).contains(n))
            .ok_or_else(|| {
                bad(&format!(
                    "the seconds are not a number from 1 to {SECONDS_MAX}"
                ))
            })?;
        Ok(Some(RateLimit {
            from,
            burst,
            seconds,
        }))
    }

    /// The limit as `VLOG_RATELIMIT` writes it (`off` for none).
    pub fn as_env(limit: Option<RateLimit>) -> String {
        match limit {
            None => "off".to_owned(),
            Some(l) => format!("{}:{}/{}", l.from as u8, l.burst, l.seconds),
        }
    }
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_write_back() {
        let l = RateLimit::parse("3:10/5").unwrap().unwrap();
        assert_eq!((l.from, l.burst, l.seconds), (Priority::Warning, 10, 5));
        assert_eq!(RateLimit::as_env(Some(l)), "3:10/5");
        let all = RateLimit::parse("100/1").unwrap().unwrap();
        assert_eq!(all.from, Priority::Debug);
        assert_eq!(
            RateLimit::parse(&RateLimit::as_env(Some(all))).unwrap(),
            Some(all)
        );
        assert_eq!(
            RateLimit::parse("error:1/60").unwrap().unwrap().from,
            Priority::Error
        );
        assert_eq!(RateLimit::parse("off").unwrap(), None);
        assert_eq!(RateLimit::as_env(None), "off");
        for bad in [
            "",
            "10",
            "10/",
            "/5",
            "0/5",
            "10/0",
            "5:10/5",
            "x:10/5",
            "10/5/5",
            "1000001/5",
            "10/86401",
            "-1/5",
            "10/ 5",
            "99999999999/5",
        ] {
            let e = RateLimit::parse(bad).unwrap_err();
            assert!(e.message.contains("BURST/SECONDS"), "{bad}: {}", e.message);
        }
    }
}
