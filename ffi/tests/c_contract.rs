//! The topic contract from C: `tests/c/contract.c` run as a separate process under a watchdog,
//! natively and under valgrind memcheck (skipped with a message when valgrind is missing),
//! against its own C publishers and a Rust one.

mod support;

use shmcast_transport::Publisher;
use support::{Link, Runner, compile};

/// The struct the C program declares as `Tick`.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Tick {
    seq: u64,
    price: f64,
}

/// C publishers declare a type and a schema, C subscribers match, mismatch (each field) and
/// read the declaration; bad declarations and expectations are `SHMCAST_EINVAL`. Then a C
/// subscriber expecting the C `Tick` meets a Rust publisher of `pod::<Tick>()`.
fn contract(r: Runner) {
    let rust_topic = r.topic("contract-rust");
    let mut publisher = Publisher::builder(&rust_topic)
        .pod::<Tick>()
        .bind()
        .unwrap();
    let mut c = r.spawn(
        &compile("contract", Link::Shared),
        &[&r.topic("contract"), &rust_topic],
    );
    c.expect_line("connected");
    c.wait_for("the C subscriber admitted", || {
        publisher.subscriber_count() == 1
    });
    publisher
        .send_pod(&Tick {
            seq: 42,
            price: 2.5,
        })
        .unwrap();
    let got = c.wait();
    got.assert_success();
    assert!(
        got.stdout.contains("tick seq=42 price_x10=25"),
        "{}",
        got.stdout
    );
    assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
    // The C subscriber refused for expecting "app::Tick" left; the matching one is gone too.
    drop(publisher);
}

#[test]
fn native() {
    contract(Runner { valgrind: false });
}

#[test]
fn valgrind() {
    if !support::valgrind_available() {
        eprintln!(
            "SKIPPED: valgrind is not installed; the C tests ran natively only \
             (install valgrind to check them with memcheck)"
        );
        return;
    }
    contract(Runner { valgrind: true });
}
