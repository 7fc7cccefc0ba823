//! Parsers for flag values that clap checks, so that a wrong one is a usage error (exit code 2)
//! said in plain words, with the value as the user typed it.

use std::time::Duration;

/// The longest duration a flag takes: 10^9 seconds (31.7 years). Every deadline it sets then
/// fits a clock reading with room to spare, where 1e300 seconds would overflow it.
pub const MAX_SECONDS: f64 = 1e9;

/// A number of seconds from 0 to [`MAX_SECONDS`] (`1.5`, `0.2`, `60`).
pub fn seconds(value: &str) -> Result<Duration, String> {
    in_seconds(value.parse().map_err(|_| NOT_SECONDS.to_owned())?)
}

/// [`seconds`] for a value already read as a number.
pub fn in_seconds(secs: f64) -> Result<Duration, String> {
    if within_limits(secs)? < 0.0 {
        return Err("must not be negative".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A bound that may be lifted: a positive number of seconds up to [`MAX_SECONDS`], or `none`
/// (no bound).
pub fn bound(value: &str) -> Result<Bound, String> {
    if value == "none" {
        return Ok(Bound(None));
    }
    // `inf` parses as a number; no bound is said `none`.
    if value.parse::<f64>().is_ok_and(|secs| secs == f64::INFINITY) {
        return Err("for no bound, write none".into());
    }
    let secs = number_of_seconds(value).map_err(|why| format!("{why}; none means no bound"))?;
    if secs <= 0.0 {
        return Err("must be a positive number of seconds, or none for no bound".into());
    }
    Ok(Bound(Some(Duration::from_secs_f64(secs))))
}

/// A bound from [`bound`]: `None` for `none`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound(pub Option<Duration>);

const NOT_SECONDS: &str = "not a number of seconds";

/// `value` as seconds, refusing what is not a number and what is too large to wait.
fn number_of_seconds(value: &str) -> Result<f64, String> {
    within_limits(value.parse().map_err(|_| NOT_SECONDS.to_owned())?)
}

/// `secs`, unless it is no number or too large to wait.
fn within_limits(secs: f64) -> Result<f64, String> {
    if secs.is_nan() {
        return Err(NOT_SECONDS.into());
    }
    if secs > MAX_SECONDS {
        return Err(format!(
            "too large (at most {MAX_SECONDS:e} seconds: 31.7 years)"
        ));
    }
    Ok(secs)
}

/// A schema as `NAME@VERSION` names it (`app.Tick@2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    pub name: String,
    pub version: u32,
}

/// `NAME@VERSION`: a schema's name and its version, a whole number up to 4294967295.
pub fn schema(value: &str) -> Result<Schema, String> {
    let expected = "expected NAME@VERSION, such as app.Tick@2";
    let Some((name, version)) = value.rsplit_once('@') else {
        return Err(expected.into());
    };
    if name.is_empty() {
        return Err(format!("{expected}: the name is empty"));
    }
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{expected}: version {version:?} is not a whole number"
        ));
    }
    let version = version
        .parse::<u32>()
        .map_err(|_| format!("version {version} is too large (at most {})", u32::MAX))?;
    Ok(Schema {
        name: name.to_owned(),
        version,
    })
}

/// A whole number of at least `MIN`.
pub fn at_least<const MIN: u64>(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if n >= MIN => Ok(n),
        Ok(_) => Err(format!("must be at least {MIN}")),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// Other users' processes a command deals with: `any`, or uids separated by commas (`1001,1002`);
/// the command's own uid always is.
pub fn uids(value: &str) -> Result<shmcast::Admission, String> {
    if value == "any" {
        return Ok(shmcast::Admission::AnyUid);
    }
    let list: Result<Vec<u32>, String> = value
        .split(',')
        .map(|uid| {
            uid.trim()
                .parse::<u32>()
                .map_err(|_| format!("{uid:?} is not a uid: give uids separated by commas, or any"))
        })
        .collect();
    Ok(shmcast::Admission::Uids(list?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmcast::Admission;

    #[test]
    fn uids_are_any_or_a_list() {
        assert_eq!(uids("any"), Ok(Admission::AnyUid));
        assert_eq!(uids("1001, 1002"), Ok(Admission::Uids(vec![1001, 1002])));
        assert!(uids("bob").unwrap_err().contains("\"bob\" is not a uid"));
        assert!(uids("1,").is_err());
    }

    #[test]
    fn seconds_are_bounded_and_said_as_typed() {
        assert_eq!(seconds("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        assert_eq!(seconds("1e9"), Ok(Duration::from_secs(1_000_000_000)));
        let too_large = "too large (at most 1e9 seconds: 31.7 years)";
        for (value, why) in [
            ("1e300", too_large),
            ("inf", too_large),
            ("nan", "not a number of seconds"),
            ("soon", "not a number of seconds"),
            ("-1", "must not be negative"),
        ] {
            assert_eq!(seconds(value), Err(why.to_owned()), "{value}");
        }
    }

    #[test]
    fn a_bound_is_positive_seconds_or_none() {
        assert_eq!(bound("none"), Ok(Bound(None)));
        assert_eq!(bound("0.3"), Ok(Bound(Some(Duration::from_millis(300)))));
        let positive = "must be a positive number of seconds, or none for no bound";
        for (value, why) in [
            ("inf", "for no bound, write none"),
            (
                "1e300",
                "too large (at most 1e9 seconds: 31.7 years); none means no bound",
            ),
            ("nan", "not a number of seconds; none means no bound"),
            ("never", "not a number of seconds; none means no bound"),
            ("0", positive),
            ("-inf", positive),
        ] {
            assert_eq!(bound(value), Err(why.to_owned()), "{value}");
        }
    }

    #[test]
    fn schemas_name_a_version_that_fits() {
        let tick = Schema {
            name: "app.Tick".into(),
            version: 2,
        };
        assert_eq!(schema("app.Tick@2"), Ok(tick));
        assert_eq!(schema("a@b@4294967295").unwrap().name, "a@b");
        assert_eq!(
            schema("app.X@99999999999"),
            Err("version 99999999999 is too large (at most 4294967295)".into())
        );
        for bad in ["app.X", "@1", "app.X@", "app.X@v1", "app.X@-1", "app.X@+1"] {
            assert!(
                schema(bad)
                    .unwrap_err()
                    .starts_with("expected NAME@VERSION"),
                "{bad}"
            );
        }
    }
}
