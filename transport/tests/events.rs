//! The structured events of the `tracing` feature, captured by a collector of our own: a
//! subscriber process admitted and then killed (admission and hang-up, naming its pid), a
//! malformed request and a subscriber over the limit (refusals and why), a gating subscriber
//! process that stops reading (a stall, then its demotion; and a stall reported once when there
//! is no bound), and a stale socket replaced by a new publisher.

mod common;

use common::child::{Proc, spawn};
use common::until;
use shmcast::{ConnectError, LoanError, Publisher, Subscriber};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, span};

/// One event as recorded: its level, message and fields (values as they display).
#[derive(Clone, Debug)]
struct Recorded {
    level: Level,
    message: String,
    fields: BTreeMap<String, String>,
}

impl Recorded {
    fn field(&self, name: &str) -> &str {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("event {self:?} has no field {name}"))
    }
}

#[derive(Default)]
struct Capture {
    events: Mutex<Vec<Recorded>>,
}

struct Fields<'a>(&'a mut Recorded);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let value = format!("{value:?}");
        if field.name() == "message" {
            self.0.message = value;
        } else {
            self.0.fields.insert(field.name().to_owned(), value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .fields
            .insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "shmcast"
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut recorded = Recorded {
            level: *event.metadata().level(),
            message: String::new(),
            fields: BTreeMap::new(),
        };
        event.record(&mut Fields(&mut recorded));
        self.events.lock().unwrap().push(recorded);
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

/// The process-wide collector (the server thread's events need a global one); tests tell their
/// events apart by topic.
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Forward(capture))
            .expect("no other collector in this test binary");
        capture
    })
}

/// The global default must own its collector; this one forwards to the leaked [`Capture`].
struct Forward(&'static Capture);

impl tracing::Subscriber for Forward {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }
    fn new_span(&self, attrs: &span::Attributes<'_>) -> span::Id {
        self.0.new_span(attrs)
    }
    fn record(&self, id: &span::Id, values: &span::Record<'_>) {
        self.0.record(id, values)
    }
    fn record_follows_from(&self, id: &span::Id, follows: &span::Id) {
        self.0.record_follows_from(id, follows)
    }
    fn event(&self, event: &Event<'_>) {
        self.0.event(event)
    }
    fn enter(&self, id: &span::Id) {
        self.0.enter(id)
    }
    fn exit(&self, id: &span::Id) {
        self.0.exit(id)
    }
}

/// The events recorded so far for `topic` with `message`.
fn events(topic: &Path, message: &str) -> Vec<Recorded> {
    let topic = topic.display().to_string();
    capture()
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.message == message && e.fields.get("topic") == Some(&topic))
        .cloned()
        .collect()
}

/// Waits (under the watchdog) for the first event for `topic` with `message`.
fn expect_event(topic: &Path, message: &str) -> Recorded {
    let mut found = None;
    until(&format!("event {message:?} on {}", topic.display()), || {
        found = events(topic, message).into_iter().next();
        found.is_some()
    });
    found.unwrap()
}

fn topic(name: &str) -> String {
    format!("events-{}-{name}", std::process::id())
}

fn uid() -> String {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }.to_string()
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "idle" => {
            // A gating subscriber that connects and never reads.
            let _sub = common::connect(&args[0]);
            println!("ready");
            std::thread::sleep(Duration::from_secs(3600));
        }
        r => panic!("unknown role {r}"),
    }
}

fn idle_subscriber(topic: &str) -> Proc {
    let mut child = spawn("idle", &[topic.to_owned()]);
    child.expect_line("ready");
    child
}

/// A publisher of a small ring with `stall_bound`, and a gating subscriber process that never
/// reads, admitted, with the ring full.
fn stalled_by_an_idle_subscriber(topic: &str, stall_bound: Option<Duration>) -> (Publisher, Proc) {
    let mut publisher = Publisher::builder(topic)
        .capacity(4096)
        .max_message(256)
        .stall_bound(stall_bound)
        .bind()
        .unwrap();
    let child = idle_subscriber(topic);
    until("the subscriber's admission", || {
        publisher.subscriber_count() == 1
    });
    let mut published = 0;
    while publisher.try_loan(256).map(|l| l.publish()).is_ok() {
        published += 1;
    }
    assert!(published > 0, "the ring takes messages");
    (publisher, child)
}

#[test]
fn admission_and_hang_up_name_the_subscriber_process() {
    capture();
    let t = topic("admit");
    let publisher = Publisher::bind(&t).unwrap();
    let path = publisher.path().to_owned();
    let child = idle_subscriber(&t);
    let pid = child.pid().to_string();

    let admitted = expect_event(&path, "subscriber admitted");
    assert_eq!(admitted.level, Level::INFO);
    assert_eq!(admitted.field("pid"), pid);
    assert_eq!(admitted.field("uid"), uid());
    assert_eq!(admitted.field("mode"), "Gating");
    let id = admitted.field("subscriber").to_owned();

    child.kill();
    let gone = expect_event(&path, "subscriber hung up");
    assert_eq!(gone.field("pid"), pid);
    assert_eq!(gone.field("subscriber"), id);
    until("the publisher removing the subscriber", || {
        publisher.subscriber_count() == 0
    });
}

#[test]
fn refusals_say_why() {
    capture();
    let t = topic("refuse");
    let publisher = Publisher::builder(&t)
        .max_subscribers(Some(1))
        .bind()
        .unwrap();
    let path = publisher.path().to_owned();

    let reply = shmcast::test_support::raw_send(&path, b"not a handshake", &[]).unwrap();
    assert!(reply.is_some(), "a malformed request gets a refusal");
    let malformed = expect_event(&path, "connection refused");
    assert_eq!(malformed.level, Level::WARN);
    assert_eq!(malformed.field("reason"), "BadRequest");
    assert_eq!(malformed.field("pid"), std::process::id().to_string());
    assert_eq!(malformed.field("uid"), uid());

    let _first = Subscriber::connect(&t).unwrap();
    let second = Subscriber::connect(&t);
    assert!(
        matches!(second, Err(ConnectError::Refused { .. })),
        "{second:?}"
    );
    until("the refusal of the second subscriber", || {
        events(&path, "connection refused")
            .iter()
            .any(|e| e.field("reason") == "Busy")
    });
}

#[test]
fn a_stalled_publisher_reports_the_stall_then_the_demotion() {
    capture();
    let t = topic("stall");
    let (mut publisher, child) =
        stalled_by_an_idle_subscriber(&t, Some(Duration::from_millis(200)));
    let path = publisher.path().to_owned();
    let pid = child.pid().to_string();
    // One more message: the loan waits out the stall bound and demotes the child.
    publisher
        .loan_timeout(256, Duration::from_secs(60))
        .expect("the demotion frees the ring")
        .publish();

    let stalled = expect_event(&path, "publisher stalled");
    assert_eq!(stalled.level, Level::WARN);
    assert_eq!(stalled.field("pid"), pid);
    assert_eq!(stalled.field("demoting"), "true");
    assert!(stalled.field("waited_ms").parse::<u64>().unwrap() >= 200);
    let demoted = expect_event(&path, "subscriber demoted");
    assert_eq!(demoted.field("pid"), pid);
    assert_eq!(demoted.field("uid"), uid());
    drop(child);
}

#[test]
fn a_publisher_without_a_stall_bound_reports_a_long_wait_once() {
    capture();
    let t = topic("forever");
    let (mut publisher, child) = stalled_by_an_idle_subscriber(&t, None);
    let path = publisher.path().to_owned();
    // Past the report (after the default stall bound), then give up: nothing is demoted.
    let waited = publisher.loan_timeout(256, Duration::from_secs(7));
    assert!(matches!(waited, Err(LoanError::Timeout)), "{waited:?}");
    let stalls = events(&path, "publisher stalled");
    assert_eq!(stalls.len(), 1, "{stalls:?}");
    assert_eq!(stalls[0].field("demoting"), "false");
    assert_eq!(stalls[0].field("pid"), child.pid().to_string());
    assert!(events(&path, "subscriber demoted").is_empty());
}

#[test]
fn replacing_a_stale_socket_is_reported() {
    capture();
    let dir = std::env::temp_dir().join(topic("stale-dir"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join("topic");
    // What a publisher killed by a signal leaves: our socket file, refusing connections.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let publisher = Publisher::bind(path.to_str().unwrap()).unwrap();
    let replaced = expect_event(publisher.path(), "stale socket replaced");
    assert_eq!(replaced.level, Level::INFO);
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
}
