//! Writes the seed corpora: `cargo run --example seed [DIR]` (default `corpus/` next to this
//! crate's manifest), one directory per fuzz target.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    let n = shmcast_fuzz::seeds::write_all(&dir)?;
    println!("wrote {n} seeds under {}", dir.display());
    Ok(())
}
