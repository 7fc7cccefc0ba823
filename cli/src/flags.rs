//! Parsers for flag values that clap checks, so that a wrong one is a usage error (exit code 2)
//! said in plain words.

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
}
