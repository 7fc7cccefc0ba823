//! The topic contract: a publisher declares what its topic carries, every subscriber can read
//! the declaration, and one that states an expectation is refused with a typed error naming
//! both sides when any field differs (name, size, alignment, schema, version, maximum message).
//! Bad declarations and expectations are refused where they are made; a hostile publisher's
//! malformed contract is a protocol error; peers of the previous protocol version and this one
//! refuse each other clearly. Every test holds an `FdGuard`: a refused subscriber leaves no
//! descriptor behind.

mod common;

use common::expect::{protocol, refused};
use common::fake_publisher::hostile;
use common::image::{Image, MAX};
use common::{FdGuard, until};
use shmcast::test_support::{encode_welcome_declaring, encode_welcome_raw, raw_reply, serve_one};
use shmcast::{
    BindError, ConnectError, Contract, DecodeError, InvalidContract, LoanError, MAX_CONTRACT_NAME,
    MessageType, Mode, ProtocolError, Publisher, RecvError, Subscriber, SubscriberBuilder,
};
use shmcast_core::CONTROL_BLOCK_LEN;
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("contract-{}-{name}", std::process::id())
}

const T: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Tick {
    seq: u64,
    price: f64,
}

/// Another program's `Tick`: same name, another layout.
mod wider {
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C)]
    pub struct Tick {
        pub seq: u64,
        pub price: f64,
        pub volume: u64,
    }
}

/// Same name and size, another alignment.
mod narrower {
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C)]
    pub struct Tick {
        pub words: [u32; 4],
    }
}

/// The mismatch a connect must have returned: (expected, offered, its text).
fn mismatch(r: Result<Subscriber, ConnectError>) -> (String, Contract, String) {
    match refused(r) {
        e @ ConnectError::ContractMismatch { .. } => {
            let text = e.to_string();
            let ConnectError::ContractMismatch { expected, offered } = e else {
                unreachable!()
            };
            (expected.to_string(), offered, text)
        }
        e => panic!("expected a contract mismatch, got {e:?}"),
    }
}

/// The subscriber builder for `t`, given a moment for the publisher to be there.
fn sub(t: &str) -> SubscriberBuilder {
    Subscriber::builder(t).connect_timeout(T)
}

#[test]
fn a_declared_pod_is_met_and_every_subscriber_reads_it() {
    let fds = FdGuard::new();
    let t = topic("match");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 16)
        .pod::<Tick>()
        .bind()
        .unwrap();
    let declared = publisher.contract().clone();
    assert_eq!(
        declared.message,
        MessageType::Pod {
            name: "Tick".into(),
            size: 16,
            align: 8
        },
        "named without its module path"
    );
    assert_eq!(declared.max_message, 1 << 14);
    assert_eq!(
        declared.to_string(),
        "pod \"Tick\" (16 bytes, align 8), messages up to 16384 bytes"
    );
    let mut typed = sub(&t)
        .expect_pod::<Tick>()
        .expect_max_message(1 << 14)
        .connect()
        .unwrap();
    // A subscriber that states nothing reads the declaration all the same.
    let mut plain = sub(&t).lossy().connect().unwrap();
    assert_eq!(typed.contract(), &declared);
    assert_eq!(plain.contract(), &declared);
    publisher.send_pod(&Tick { seq: 1, price: 2.5 }).unwrap();
    for s in [&mut typed, &mut plain] {
        let got = *s.recv_timeout(T).unwrap().as_pod::<Tick>().unwrap();
        assert_eq!(got, Tick { seq: 1, price: 2.5 });
    }
    // A user-chosen name, and a schema, are met the same way.
    drop((typed, plain, publisher));
    let publisher = Publisher::builder(&t)
        .pod_named::<Tick>("app.Tick/2")
        .bind()
        .unwrap();
    let s = sub(&t).expect_pod_named::<Tick>("app.Tick/2").connect();
    assert_eq!(s.unwrap().contract(), publisher.contract());
    drop(publisher);
    let publisher = Publisher::builder(&t)
        .schema("proto:app.Quote", 3)
        .bind()
        .unwrap();
    let s = sub(&t)
        .expect_schema("proto:app.Quote", 3)
        .connect()
        .unwrap();
    assert_eq!(
        s.contract().message,
        MessageType::schema("proto:app.Quote", 3)
    );
    drop((s, publisher));
    // Nothing declared: bytes of no declared type, as before the contract existed.
    let publisher = Publisher::bind(&t).unwrap();
    let s = sub(&t).connect().unwrap();
    assert_eq!(s.contract().message, MessageType::Bytes);
    drop((s, publisher));
    fds.check();
}

/// The defect this contract exists for: a `u64` read as an `f64` printed `5e-324`, no error.
#[test]
fn a_u64_topic_refuses_an_f64_subscriber() {
    let fds = FdGuard::new();
    let t = topic("u64");
    let mut publisher = Publisher::builder(&t).pod::<u64>().bind().unwrap();
    let (expected, offered, text) = mismatch(sub(&t).expect_pod::<f64>().connect());
    assert_eq!(expected, "pod \"f64\" (8 bytes, align 8)");
    assert_eq!(&offered, publisher.contract());
    assert_eq!(
        text,
        "topic contract mismatch: the topic carries pod \"u64\" (8 bytes, align 8), messages up \
         to 262144 bytes; this subscriber expects pod \"f64\" (8 bytes, align 8)"
    );
    publisher.send_pod(&1u64).unwrap();
    let mut right = sub(&t).expect_pod::<u64>().connect().unwrap();
    publisher.send_pod(&2u64).unwrap();
    assert_eq!(right.recv_timeout(T).unwrap().as_pod::<u64>(), Ok(&2));
    drop((right, publisher));
    fds.check();
}

#[test]
fn every_field_that_differs_is_a_mismatch_naming_both_sides() {
    let fds = FdGuard::new();
    let t = topic("fields");
    let publisher = Publisher::builder(&t)
        .capacity(1 << 16)
        .pod::<Tick>()
        .bind()
        .unwrap();
    let offered = "the topic carries pod \"Tick\" (16 bytes, align 8), messages up to 16384 bytes";
    let cases: [(&str, SubscriberBuilder, &str); 6] = [
        (
            "name",
            sub(&t).expect_pod_named::<Tick>("Quote"),
            "pod \"Quote\" (16 bytes, align 8)",
        ),
        (
            "size",
            sub(&t).expect_pod::<wider::Tick>(),
            "pod \"Tick\" (24 bytes, align 8)",
        ),
        (
            "alignment",
            sub(&t).expect_pod::<narrower::Tick>(),
            "pod \"Tick\" (16 bytes, align 4)",
        ),
        (
            "kind",
            sub(&t).expect_schema("Tick", 1),
            "schema \"Tick\" version 1",
        ),
        (
            "maximum message",
            sub(&t).expect_max_message((1 << 14) + 1),
            "a maximum message of at least 16385 bytes",
        ),
        (
            "type and maximum message",
            sub(&t).expect_pod::<Tick>().expect_max_message(1 << 20),
            "pod \"Tick\" (16 bytes, align 8) and a maximum message of at least 1048576 bytes",
        ),
    ];
    for (n, (field, builder, expects)) in cases.into_iter().enumerate() {
        let (expected, got, text) = mismatch(builder.connect());
        assert_eq!(&got, publisher.contract(), "{field}");
        assert_eq!(expected, expects, "{field}");
        assert_eq!(
            text,
            format!("topic contract mismatch: {offered}; this subscriber expects {expects}"),
            "{field}"
        );
        // The publisher refused it before admitting anything.
        let stats = publisher.stats();
        assert_eq!(
            (stats.refused, stats.admitted, stats.departed),
            (n as u64 + 1, 0, 0),
            "{field}"
        );
        assert_eq!(publisher.subscriber_count(), 0);
    }
    drop(publisher);

    // Schemas: the name and the version must both be equal.
    let publisher = Publisher::builder(&t)
        .schema("proto:app.Tick", 2)
        .bind()
        .unwrap();
    let schema = "the topic carries schema \"proto:app.Tick\" version 2";
    for (builder, expects) in [
        (
            sub(&t).expect_schema("proto:app.Tick", 3),
            "schema \"proto:app.Tick\" version 3",
        ),
        (
            sub(&t).expect_schema("proto:app.Tock", 2),
            "schema \"proto:app.Tock\" version 2",
        ),
        (
            sub(&t).expect_pod::<Tick>(),
            "pod \"Tick\" (16 bytes, align 8)",
        ),
    ] {
        let (expected, _, text) = mismatch(builder.connect());
        assert_eq!(expected, expects);
        assert!(text.contains(schema), "{text}");
    }
    drop(publisher);

    // A publisher that declares nothing meets no stated type.
    let publisher = Publisher::bind(&t).unwrap();
    let (_, got, text) = mismatch(sub(&t).expect_pod::<Tick>().connect());
    assert_eq!(got.message, MessageType::Bytes);
    assert!(
        text.contains("the topic carries bytes with no declared type or schema"),
        "{text}"
    );
    drop(publisher);
    fds.check();
}

/// A publisher waiting for a subscriber before its first message is not released by one its
/// contract does not meet: that one is refused before it is admitted, and the stream waits for
/// one that can read it.
#[test]
fn a_refused_subscriber_does_not_count_for_a_publisher_waiting_for_subscribers() {
    let fds = FdGuard::new();
    let t = topic("waiting");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 16)
        .pod::<Tick>()
        .bind()
        .unwrap();
    std::thread::scope(|s| {
        let wrong = s.spawn(|| sub(&t).expect_pod::<wider::Tick>().connect());
        let (_, _, text) = mismatch(wrong.join().unwrap());
        assert!(
            text.contains("this subscriber expects pod \"Tick\" (24 bytes"),
            "{text}"
        );
        let waited = publisher.wait_for_subscribers(1, Duration::from_millis(200));
        assert!(waited.is_err(), "released by a refused subscriber");
        let right = s.spawn(|| {
            let mut right = sub(&t).expect_pod::<Tick>().connect().unwrap();
            let got = *right.recv_timeout(T).unwrap().as_pod::<Tick>().unwrap();
            got.seq
        });
        assert_eq!(publisher.wait_for_subscribers(1, T).unwrap(), 1);
        publisher.send_pod(&Tick { seq: 9, price: 1.0 }).unwrap();
        assert_eq!(
            right.join().unwrap(),
            9,
            "the first message reached the right one"
        );
    });
    let stats = publisher.stats();
    assert_eq!((stats.refused, stats.admitted), (1, 1));
    drop(publisher);
    fds.check();
}

/// The typed sends of a topic that declares a Pod type take only a type of its size and
/// alignment; a topic that declares none takes any.
#[test]
fn typed_sends_keep_to_the_declared_pod() {
    let fds = FdGuard::new();
    let t = topic("typed-sends");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 16)
        .pod::<Tick>()
        .bind()
        .unwrap();
    let mut sub = sub(&t).expect_pod::<Tick>().connect().unwrap();
    let wrong = publisher.send_pod(&wider::Tick {
        seq: 1,
        price: 1.0,
        volume: 2,
    });
    let Err(
        e @ LoanError::WrongType {
            size: 24, align: 8, ..
        },
    ) = wrong
    else {
        panic!("{wrong:?}")
    };
    assert_eq!(
        e.to_string(),
        "a value of 24 bytes, align 8, is not the topic's declared pod \"Tick\" (16 bytes, align 8)"
    );
    assert!(matches!(
        publisher.loan_pod::<narrower::Tick>(),
        Err(LoanError::WrongType { align: 4, .. })
    ));
    assert!(matches!(
        publisher.loan_pod::<u8>(),
        Err(LoanError::WrongType { size: 1, .. })
    ));
    publisher.send_pod(&Tick { seq: 3, price: 4.0 }).unwrap();
    let got = *sub.recv_timeout(T).unwrap().as_pod::<Tick>().unwrap();
    assert_eq!(got.seq, 3, "only the right type reached the subscriber");
    assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
    // Without a declaration every Pod type goes.
    let t2 = topic("typed-sends-bytes");
    let mut plain = Publisher::builder(&t2).capacity(1 << 16).bind().unwrap();
    plain
        .send_pod(&wider::Tick {
            seq: 1,
            price: 1.0,
            volume: 2,
        })
        .unwrap();
    plain.send_pod(&7u8).unwrap();
    drop((sub, publisher, plain));
    fds.check();
}

/// On a topic that declares a Pod type, raw sends and fixed-length loans of another length are
/// refused before they wait or reserve anything; only a loan of variable length, whose length
/// is known when it is published, goes unchecked, and its subscribers refuse what it sent.
#[test]
fn raw_sends_of_another_length_are_refused_on_a_pod_topic() {
    let fds = FdGuard::new();
    let t = topic("raw-lengths");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 12)
        .pod::<Tick>()
        .bind()
        .unwrap();
    let mut sub = sub(&t).expect_pod::<Tick>().connect().unwrap();
    // Fill the ring, so that a refusal that waited for space first would hang or time out.
    let mut sent = 0u64;
    while publisher.try_loan(16).map(|l| l.publish()).is_ok() {
        sent += 1;
    }
    let wrong = publisher.send(b"abc");
    let Err(ref e @ LoanError::WrongLength { len: 3, .. }) = wrong else {
        panic!("{wrong:?}")
    };
    assert_eq!(
        e.to_string(),
        "the topic declares every message one Tick (16 bytes): a message of 3 bytes is not one"
    );
    let started = std::time::Instant::now();
    for result in [
        publisher.loan(17).map(drop),
        publisher.try_loan(0).map(drop),
        publisher.loan_timeout(8, T).map(drop),
    ] {
        assert!(
            matches!(result, Err(LoanError::WrongLength { .. })),
            "{result:?}"
        );
    }
    assert!(started.elapsed() < T, "a refusal waited for space");
    // The stream is intact: the subscriber reads exactly what fit, then nothing.
    for seq in 0..sent {
        let sample = sub.recv_timeout(T).unwrap();
        assert_eq!((sample.seq(), sample.len()), (seq, 16));
    }
    assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
    // A loan of variable length is not checked; its subscriber refuses to read a Tick in it.
    let mut loan = publisher.loan_up_to(16).unwrap();
    loan.extend_from_slice(b"short").unwrap();
    loan.publish();
    let sample = sub.recv_timeout(T).unwrap();
    assert!(sample.as_pod::<Tick>().is_err());
    drop(sample);
    drop((sub, publisher));
    fds.check();
}

#[test]
fn impossible_declarations_and_expectations_are_refused_where_they_are_made() {
    let fds = FdGuard::new();
    let t = topic("invalid");
    let declare = |message: MessageType| match Publisher::builder(&t)
        .capacity(4096)
        .declare(message)
        .bind()
    {
        Err(BindError::Contract(e)) => e,
        other => panic!("expected a contract error, got {other:?}"),
    };
    let long = "x".repeat(MAX_CONTRACT_NAME + 1);
    let name_errors = [
        (String::new(), "is empty"),
        (long.clone(), "is too long"),
        (
            "a\nb".to_string(),
            "holds a control or direction-override character",
        ),
    ];
    for (name, reason) in &name_errors {
        for message in [
            MessageType::pod_named::<Tick>(name.clone()),
            MessageType::schema(name.clone(), 1),
        ] {
            assert_eq!(
                declare(message),
                InvalidContract::Name {
                    name: name.clone(),
                    reason
                }
            );
        }
    }
    let e = declare(MessageType::pod_named::<Tick>(""));
    assert_eq!(
        BindError::Contract(e).to_string(),
        "declaring the topic contract: contract name \"\" (0 bytes) is empty; names are 1-128 \
         bytes of UTF-8 without control characters"
    );
    let too_long = BindError::Contract(declare(MessageType::schema(long.clone(), 1)));
    assert_eq!(
        too_long.to_string(),
        format!(
            "declaring the topic contract: contract name \"{}\"... (129 bytes) is too long; \
             names are 1-128 bytes of UTF-8 without control characters",
            "x".repeat(48)
        )
    );
    let odd = MessageType::Pod {
        name: "Odd".into(),
        size: 12,
        align: 3,
    };
    let e = declare(odd.clone());
    assert_eq!(e, InvalidContract::Align(3));
    assert_eq!(
        e.to_string(),
        "pod alignment 3 is not a power of two up to 16 (the alignment of every payload)"
    );
    // The default maximum message of a 4 KiB ring is 1 KiB.
    let e = declare(MessageType::pod::<[u8; 2048]>());
    assert_eq!(
        e,
        InvalidContract::Size {
            size: 2048,
            max_message: 1024
        }
    );
    assert_eq!(
        e.to_string(),
        "pod of 2048 bytes is larger than the maximum message of 1024 bytes"
    );

    // A subscriber finds out before it looks for a publisher (there is none here).
    for message in [
        MessageType::pod_named::<Tick>(""),
        MessageType::schema(long, 1),
        odd,
    ] {
        let e = refused(Subscriber::builder(&t).expect(message.clone()).connect());
        let ConnectError::InvalidExpectation(e) = e else {
            panic!("{message}: expected an invalid expectation, got {e:?}")
        };
        assert_eq!(Err(e), message_validity(&message));
    }
    let e = refused(Subscriber::builder(&t).expect_schema("", 1).connect());
    assert_eq!(
        e.to_string(),
        "expecting a topic contract: contract name \"\" (0 bytes) is empty; names are 1-128 \
         bytes of UTF-8 without control characters"
    );
    fds.check();
}

/// What a publisher declaring `message` is told.
fn message_validity(message: &MessageType) -> Result<(), InvalidContract> {
    match Publisher::builder(topic("validity"))
        .declare(message.clone())
        .bind()
    {
        Ok(_) => Ok(()),
        Err(BindError::Contract(e)) => Err(e),
        Err(e) => panic!("{e}"),
    }
}

/// A hostile publisher's contract: every field is checked before anything is trusted, and a
/// refused welcome's descriptors are closed (`hostile` holds the descriptor guard).
#[test]
fn malformed_contracts_in_a_welcome_are_protocol_errors() {
    hostile("contracts", |scene| {
        let image = Image::new(Mode::Lossy);
        image.seal();
        let fds = image.fds();
        let ring_len = image.ring.len;
        let cb_len = CONTROL_BLOCK_LEN as u64;
        let raw =
            |message, a, b, name: &[u8]| encode_welcome_raw(ring_len, cb_len, message, a, b, name);
        let field = |reply: Vec<u8>, field: &'static str| {
            let text = protocol(scene.connect(&reply, &fds, Mode::Lossy).0);
            assert_eq!(text, DecodeError::Field(field).to_string(), "{reply:?}");
        };
        field(raw(3, 0, 0, b""), "message");
        field(raw(255, 0, 0, b"Tick"), "message");
        field(raw(0, 0, 0, b"Tick"), "name");
        field(raw(0, 1, 0, b""), "reserved");
        field(raw(0, 0, 1, b""), "reserved");
        field(raw(1, 1, 1, b"schema"), "reserved");
        for align in [0, 3, 24, 32, u32::MAX] {
            field(raw(2, 16, align, b"Tick"), "align");
        }
        let long = vec![b'x'; MAX_CONTRACT_NAME + 1];
        let bad_names: [&[u8]; 6] = [b"", b"\xff\xfe", b"Ti\xc3", b"a\nb", b"\x7f", &long];
        for name in bad_names {
            field(raw(1, 1, 0, name), "name");
            field(raw(2, 16, 8, name), "name");
        }
        let mut reserved = raw(1, 1, 0, b"schema");
        reserved[29] = 1;
        field(reserved, "reserved");
        // A name length that disagrees with the packet.
        let good = raw(2, 16, 8, b"Tick");
        for cut in [good.len() - 1, 40, 39] {
            let text = protocol(scene.connect(&good[..cut], &fds, Mode::Lossy).0);
            assert!(text.contains("wrong length"), "{cut}: {text}");
        }
        let mut longer = good.clone();
        longer.push(b'!');
        let text = protocol(scene.connect(&longer, &fds, Mode::Lossy).0);
        assert!(text.contains("wrong length"), "{text}");

        // Well-formed, but no message of the declared type fits the ring.
        let huge = encode_welcome_declaring(
            ring_len,
            cb_len,
            &MessageType::pod_named::<[u8; 2048]>("Huge"),
        );
        match refused(scene.connect(&huge, &fds, Mode::Lossy).0) {
            ConnectError::Protocol(ProtocolError::Contract(InvalidContract::Size {
                size: 2048,
                max_message,
            })) => assert_eq!(max_message, MAX as usize),
            e => panic!("expected an impossible contract, got {e:?}"),
        }

        // An honest declaration is read, and checked against an expectation.
        let tick = MessageType::pod::<Tick>();
        let honest = encode_welcome_declaring(ring_len, cb_len, &tick);
        let (sub, _conn) = scene.connect(&honest, &fds, Mode::Lossy);
        let sub = sub.expect("an honest contract is accepted");
        assert_eq!(sub.contract().message, tick);
        assert_eq!(sub.contract().max_message, MAX as usize);
        drop(sub);
    });
}

/// A subscriber refused for its expectation by a fake publisher: everything the welcome
/// carried is closed (the scenario's guard), and the publisher's end sees the hang-up.
#[test]
fn a_mismatch_closes_everything_the_welcome_carried() {
    hostile("mismatch-closes", |_| {
        let image = Image::new(Mode::Gating);
        image.seal();
        let welcome = encode_welcome_declaring(
            image.ring.len,
            CONTROL_BLOCK_LEN as u64,
            &MessageType::schema("json:order", 1),
        );
        let path = std::env::temp_dir().join(format!(
            "shmcast-contract-{}-mismatch.sock",
            std::process::id()
        ));
        let (got, conn) = std::thread::scope(|s| {
            let harness = s.spawn(|| serve_one(&path, &welcome, &image.fds()));
            let got = Subscriber::builder(path.to_str().unwrap())
                .expect_schema("json:order", 2)
                .connect_timeout(T)
                .connect();
            (got, harness.join().unwrap().unwrap())
        });
        let (expected, offered, _) = mismatch(got);
        assert_eq!(expected, "schema \"json:order\" version 2");
        assert_eq!(offered.message, MessageType::schema("json:order", 1));
        assert!(hung_up(&conn), "the subscriber closed its connection");
    });
}

/// Whether the peer of `conn` has closed its end.
fn hung_up(conn: &std::os::fd::OwnedFd) -> bool {
    let mut pfd = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(conn),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call, a zero timeout.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n == 1 && pfd.revents & libc::POLLHUP != 0
}

/// The HELLO of a subscriber of protocol version 2 (the previous one, without contracts).
fn hello_v2() -> Vec<u8> {
    let mut p = b"SHMC".to_vec();
    p.extend_from_slice(&2u16.to_le_bytes()); // version
    p.extend_from_slice(&1u16.to_le_bytes()); // HELLO
    p.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]); // gating, newest
    p
}

/// A subscriber of version 2 gets a refusal it can read, for the version, in its own version.
#[test]
fn a_previous_version_subscriber_is_refused_for_its_version() {
    let fds = FdGuard::new();
    let t = topic("v2");
    let publisher = Publisher::bind(&t).unwrap();
    let reply = raw_reply(publisher.path(), &hello_v2()).unwrap();
    let text = b"protocol version 2, this build speaks 3";
    let mut expected = b"SHMC".to_vec();
    expected.extend_from_slice(&2u16.to_le_bytes()); // in the subscriber's version
    expected.extend_from_slice(&3u16.to_le_bytes()); // REFUSE
    expected.extend_from_slice(&2u16.to_le_bytes()); // reason: protocol version
    expected.extend_from_slice(&(text.len() as u16).to_le_bytes());
    expected.extend_from_slice(text);
    assert_eq!(reply, expected, "{}", String::from_utf8_lossy(&reply));
    // A version this build knows nothing of gets the refusal in this build's version.
    let mut v9 = hello_v2();
    v9[4] = 9;
    let reply = raw_reply(publisher.path(), &v9).unwrap();
    assert_eq!(&reply[4..8], &[3, 0, 3, 0]);
    until("both refusals counted", || publisher.stats().refused == 2);
    drop(publisher);
    fds.check();
}

/// A publisher of version 2: its WELCOME (32 bytes, no contract) and its REFUSE are a version
/// error for this subscriber, whose text names both versions.
#[test]
fn a_previous_version_publisher_is_a_version_error() {
    hostile("v2-publisher", |scene| {
        let image = Image::new(Mode::Gating);
        image.seal();
        let mut welcome_v2 = b"SHMC".to_vec();
        welcome_v2.extend_from_slice(&2u16.to_le_bytes());
        welcome_v2.extend_from_slice(&2u16.to_le_bytes()); // WELCOME
        welcome_v2.extend_from_slice(&0u32.to_le_bytes()); // flags
        welcome_v2.extend_from_slice(&image.ring.len.to_le_bytes());
        welcome_v2.extend_from_slice(&(CONTROL_BLOCK_LEN as u64).to_le_bytes());
        welcome_v2.extend_from_slice(&[0; 4]);
        let mut refuse_v2 = welcome_v2[..6].to_vec();
        refuse_v2.extend_from_slice(&3u16.to_le_bytes()); // REFUSE
        refuse_v2.extend_from_slice(&2u16.to_le_bytes()); // protocol version
        let text = b"protocol version 3, this build speaks 2";
        refuse_v2.extend_from_slice(&(text.len() as u16).to_le_bytes());
        refuse_v2.extend_from_slice(text);
        for reply in [welcome_v2, refuse_v2] {
            match refused(scene.connect(&reply, &image.fds(), Mode::Gating).0) {
                e @ ConnectError::Protocol(ProtocolError::Decode(DecodeError::Version(2))) => {
                    assert_eq!(
                        e.to_string(),
                        "handshake protocol error: protocol version 2, this build speaks 3"
                    );
                }
                e => panic!("expected a version error, got {e:?}"),
            }
        }
    });
}
