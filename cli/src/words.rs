//! How counts and durations read in the command's messages: `1 message`, `3 messages`,
//! `1.5 s`, `250 ms`.

use std::time::Duration;

/// `n` and the noun, plural unless `n` is 1: `count(1, "message")` is `1 message`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A duration rounded for people: milliseconds below a second, else seconds to a tenth
/// (`1.000100084s` reads `1 s`).
pub fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        let ms = d.as_secs_f64() * 1e3;
        return if ms < 10.0 && ms.fract() != 0.0 {
            format!("{ms:.1} ms")
        } else {
            format!("{ms:.0} ms")
        };
    }
    let s = format!("{:.1}", d.as_secs_f64());
    format!("{} s", s.strip_suffix(".0").unwrap_or(&s))
}

/// A byte count in binary units (`64 KiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_in_number() {
        assert_eq!(count(0, "message"), "0 messages");
        assert_eq!(count(1, "message"), "1 message");
        assert_eq!(count(2, "subscriber"), "2 subscribers");
    }

    #[test]
    fn durations_are_rounded() {
        assert_eq!(duration(Duration::from_nanos(1_000_100_084)), "1 s");
        assert_eq!(duration(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(duration(Duration::from_micros(1500)), "1.5 ms");
        assert_eq!(duration(Duration::from_secs(60)), "60 s");
    }
}
