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
