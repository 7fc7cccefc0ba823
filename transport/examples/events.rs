//! Shows the structured events of the `tracing` feature: a gating subscriber that never reads
//! stalls the publisher, is demoted after the stall bound, then leaves.
//!
//! ```sh
//! cargo run -p shmcast --example events --features tracing
//! ```

use std::error::Error;
use std::io::IsTerminal;
use std::time::Duration;

use shmcast::{Publisher, Subscriber};

fn main() -> Result<(), Box<dyn Error>> {
    // Any tracing subscriber will do; this one prints to stderr, in colour on a terminal.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let topic = format!("events-demo-{}", std::process::id());
    let mut publisher = Publisher::builder(topic.as_str())
        .capacity(4096)
        .max_message(256)
        .stall_bound(Some(Duration::from_millis(500)))
        .bind()?;
    let idle = Subscriber::connect(&topic)?; // gating, and never reads
    publisher.wait_for_subscribers(1, Duration::from_secs(5))?;
    while publisher.try_loan(256).map(|loan| loan.publish()).is_ok() {}
    // The ring is full: this loan waits out the stall bound, then demotes the idle subscriber.
    publisher.loan(256)?.publish();
    drop(idle);
    // The hang-up is noticed by the publisher's server thread; give it a moment to say so.
    std::thread::sleep(Duration::from_millis(100));
    Ok(())
}
