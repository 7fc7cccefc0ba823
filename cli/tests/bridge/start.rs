//! What `shmcast bridge` refuses before anything starts, in one clean line naming the flag or
//! the file's field: usage errors (exit code 2), and a topic directory no topic may use.

use std::path::Path;
use std::process::{Command, Stdio};

use super::common::{code, run, scratch, shmcast};
use super::free_port;

#[test]
fn configurations_that_could_loop_or_mean_nothing_are_usage_errors() {
    let dir = scratch("bridge-usage");
    let out = run(shmcast(
        &dir,
        &["bridge", "--export", "t", "--import", "t,key=other/t"],
    ));
    assert_eq!(code(&out), 2, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could loop") && err.contains("\"t\""), "{err}");
    let out = run(shmcast(&dir, &["bridge"]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to bridge"));
    let out = run(shmcast(&dir, &["bridge", "--import", "t,flavour=x"]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option"));
}

/// A topic directory no topic may use (open to others) stops a bridge at start, in the words
/// of every other command, before any Zenoh session opens.
#[test]
fn a_topic_directory_no_topic_may_use_stops_the_bridge_at_start() {
    let dir = scratch("bridge-open-dir");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let listen = format!("tcp/127.0.0.1:{}", free_port());
    let out = run(shmcast(
        &dir,
        &["bridge", "--export", "t", "--listen", &listen],
    ));
    assert_eq!(code(&out), 1, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing topic directory") && err.contains("lets others in"),
        "{err}"
    );
}

/// Runs `shmcast bridge ARGS` and checks that it failed with `want` in one clean line: the
/// flag named, no Zenoh source location and no Debug dump.
fn refused(dir: &Path, args: &[&str], exit: i32, want: &str) {
    let mut all = vec!["bridge"];
    all.extend_from_slice(args);
    let out = run(shmcast(dir, &all));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), exit, "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.contains("running as")).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(want), "{args:?}: {err}");
    for leak in [".rs:", "/.cargo/", "Json5Err", "Location", "Single("] {
        assert!(!err.contains(leak), "{args:?} shows {leak:?}: {err}");
    }
}

#[test]
fn bad_endpoints_modes_and_keys_are_usage_errors_in_one_clean_line() {
    let dir = scratch("bridge-endpoints");
    for (args, want) in [
        (
            &["--export", "a", "--listen", "127.0.0.1:7450"][..],
            "--listen 127.0.0.1:7450: not an endpoint",
        ),
        (
            &["--export", "a", "--listen", "tcp/127.0.0.1:99999"],
            "--listen tcp/127.0.0.1:99999: port \"99999\" is not a number from 1 to 65535",
        ),
        (
            &["--export", "a", "--connect", "udp/127.0.0.1:7450"],
            "--connect udp/127.0.0.1:7450: protocol \"udp\" is not supported",
        ),
        (
            &["--export", "a", "--connect", "tcp/127.0.0.1"],
            "--connect tcp/127.0.0.1: \"127.0.0.1\" has no port",
        ),
        (
            &["--export", "a,key=/x"],
            "--export a,key=/x: key \"/x\": not a Zenoh key expression",
        ),
        (&["--mode", "client", "--export", "a"], "--mode client:"),
    ] {
        refused(&dir, args, 2, want);
    }
    // The same endpoint check for a file.
    let config = dir.join("c.json");
    std::fs::write(
        &config,
        r#"{"listen": ["127.0.0.1:7450"], "topics": [{"topic": "a", "direction": "export"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["--config", config.to_str().unwrap()],
        2,
        "c.json: listen: \"127.0.0.1:7450\": not an endpoint",
    );
    // A port in use is no usage error, but still one clean line.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp/{}", taken.local_addr().unwrap());
    refused(
        &dir,
        &["--export", "a", "--listen", &endpoint],
        1,
        &format!("cannot listen on {endpoint}: Address already in use"),
    );
    // So is a client whose router does not answer.
    let nobody = format!("tcp/127.0.0.1:{}", free_port());
    refused(
        &dir,
        &["--mode", "client", "--connect", &nobody, "--export", "a"],
        1,
        &format!("no router can be reached at {nobody}"),
    );
}

#[test]
fn invalid_topics_capacities_and_prefixes_are_refused_at_start() {
    let dir = scratch("bridge-specs");
    for (args, want) in [
        (
            &["--export", "bad name"][..],
            "--export bad name: topic: invalid topic name \"bad name\"",
        ),
        (&["--import", ".hidden"], "invalid topic name \".hidden\""),
        (
            &["--import", "a,capacity=1000"],
            "--import a,capacity=1000: capacity: 1000 is not a power of two",
        ),
        (&["--import", "a,capacity=32"], "not a power of two from 64"),
        (
            &["--import", "a,capacity=1024,max-message=1000"],
            "max-message: 1000 is not from 1 to 496",
        ),
        (
            &["--prefix", "", "--export", "a"],
            "--prefix \"\": must not be empty",
        ),
        (&["--prefix", "a*", "--export", "a"], "--prefix \"a*\""),
    ] {
        refused(&dir, args, 2, want);
    }
    // The same checks for a file.
    let config = dir.join("c.json");
    for (json, want) in [
        (
            r#"{"topics": [{"topic": "bad name", "direction": "export"}]}"#,
            "topics[0].topic: invalid topic name",
        ),
        (
            r#"{"topics": [{"topic": "a", "direction": "import", "capacity": 1000}]}"#,
            "topics[0].capacity: 1000 is not a power of two",
        ),
        (
            r#"{"prefix": "", "topics": [{"topic": "a", "direction": "export"}]}"#,
            "prefix: must not be empty",
        ),
    ] {
        std::fs::write(&config, json).unwrap();
        refused(&dir, &["--config", config.to_str().unwrap()], 2, want);
    }
}

#[test]
fn contracts_no_publisher_may_declare_are_refused_at_start() {
    let dir = scratch("bridge-contracts");
    for (args, want) in [
        (
            &["--import", "ticks,pod=T:8:3,max-message=64"][..],
            "--import ticks,pod=T:8:3,max-message=64: pod: pod alignment 3 is not a power of two",
        ),
        (
            &["--import", "ticks,pod=T:8:3"],
            "--import ticks,pod=T:8:3: pod: pod alignment 3",
        ),
        (
            &["--import", "ticks,pod=T:0:1"],
            "--import ticks,pod=T:0:1: pod: a Pod type of 0 bytes",
        ),
        (
            &["--import", "ticks,schema=@1"],
            "--import ticks,schema=@1: schema: contract name \"\" (0 bytes) is empty",
        ),
        (
            &["--import", "ticks,pod=T:128:8,max-message=64"],
            "pod: pod of 128 bytes is larger than the maximum message of 64 bytes",
        ),
    ] {
        refused(&dir, args, 2, want);
    }
    let config = dir.join("c.json");
    std::fs::write(
        &config,
        r#"{"topics": [{"topic": "a", "direction": "export"},
                       {"topic": "b", "direction": "import", "pod": "T:8:3"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["--config", config.to_str().unwrap()],
        2,
        "c.json: topics[1].pod: pod alignment 3",
    );
}

#[test]
fn option_values_that_would_be_ignored_are_refused() {
    let dir = scratch("bridge-ignored");
    for (args, want) in [
        (
            &["--export", "ticks,lossy=false"][..],
            "--export ticks,lossy=false: lossy: takes no value",
        ),
        (
            &["--export", "ticks,reliable,lossy"],
            "lossy: reliable is given too, and a topic has one reliability",
        ),
        (
            &["--import", "ticks,schema=a@1,pod=T:8:8"],
            "pod: schema is given too, and a topic has one message type",
        ),
        (
            &["--export", "ticks,"],
            "--export ticks,: an empty option (a comma with nothing after it)",
        ),
    ] {
        refused(&dir, args, 2, want);
    }
    let config = dir.join("c.json");
    let c = config.to_str().unwrap();
    for (json, want) in [
        (
            r#"{"topics": [{"topic": "a", "direction": "import", "bytes": false}]}"#,
            "c.json: topics[0].bytes: false declares nothing",
        ),
        (
            r#"{"topics": [{"topic": "a", "direction": "export"}],
                "topics": [{"topic": "b", "direction": "export"}]}"#,
            "c.json: topics: given twice",
        ),
    ] {
        std::fs::write(&config, json).unwrap();
        refused(&dir, &["--config", c], 2, want);
    }
}

#[test]
fn errors_name_the_files_fields_and_every_flag_involved() {
    let dir = scratch("bridge-naming");
    let config = dir.join("c.json");
    let c = config.to_str().unwrap();
    let export_a = r#"{"topic": "a", "direction": "export"}"#;
    for (json, extra, want) in [
        (
            format!(r#"{{"mode": "client", "topics": [{export_a}]}}"#),
            &[][..],
            "c.json: mode: \"client\" joins Zenoh through a router: give the router's endpoint \
             in connect",
        ),
        (
            r#"{"topics": [{"topic": "a", "direction": "export", "schema": "s@1"}]}"#.into(),
            &[],
            "c.json: topics[0].schema: only an import declares",
        ),
        (
            r#"{"topics": ["ticks"]}"#.into(),
            &[],
            "c.json: topics[0]: not an object",
        ),
        (
            format!(r#"{{"topics": [{export_a}, {export_a}]}}"#),
            &[],
            "c.json: topics[0] and topics[1]: topic \"a\" is bridged twice",
        ),
        (
            format!(r#"{{"topics": [{export_a}]}}"#),
            &["--import", "a,key=x/a"],
            "c.json topics[0] and --import a,key=x/a: refused, it could loop",
        ),
        (
            format!(r#"{{"listen": ["tcp/127.0.0.1:7451"], "topics": [{export_a}]}}"#),
            &["--listen", "tcp/127.0.0.1:7451"],
            "--listen tcp/127.0.0.1:7451: already in",
        ),
    ] {
        std::fs::write(&config, json).unwrap();
        let mut args = vec!["--config", c];
        args.extend_from_slice(extra);
        refused(&dir, &args, 2, want);
    }
    for (args, exit, want) in [
        (
            &[
                "--export",
                "a",
                "--import",
                "b,key=k/b",
                "--import",
                "c,key=k/b",
            ][..],
            2,
            "--import b,key=k/b and --import c,key=k/b: key k/b is bridged twice",
        ),
        (
            &[
                "--export",
                "a",
                "--listen",
                "tcp/127.0.0.1:7451",
                "--listen",
                "tcp/127.0.0.1:7451",
            ],
            2,
            "--listen tcp/127.0.0.1:7451: given twice",
        ),
        (
            &["--export", "a,key=a/$*"],
            2,
            "key \"a/$*\": wildcards (*, **, $*) are refused",
        ),
        (
            &["--export", "a", "--listen", "tcp/no-such-host.invalid:7451"],
            1,
            "cannot listen on tcp/no-such-host.invalid:7451: ",
        ),
    ] {
        refused(&dir, args, exit, want);
    }
}

#[test]
fn a_misspelt_field_in_a_file_is_named_with_the_files_fields() {
    let dir = scratch("bridge-typo");
    let config = dir.join("c.json");
    std::fs::write(
        &config,
        r#"{"topics":[{"topic":"a","direction":"export","reliabilty":"lossy"}]}"#,
    )
    .unwrap();
    let c = config.to_str().unwrap();
    refused(
        &dir,
        &["--config", c],
        2,
        "topics[0].reliabilty: unknown field",
    );
    let err = String::from_utf8_lossy(&run(shmcast(&dir, &["bridge", "--config", c])).stderr)
        .into_owned();
    assert!(err.contains("reliability, key, bytes, schema, pod, max_message, capacity"));
    assert!(err.contains("did you mean \"reliability\"?"), "{err}");
    assert!(
        !err.contains("max-message=") && !err.contains("option"),
        "{err}"
    );
    // A value of the wrong form is named by the file's field too.
    std::fs::write(
        &config,
        r#"{"topics":[{"topic":"a","direction":"import","max_message":"lots"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &["--config", c],
        2,
        "topics[0].max_message: a number of bytes",
    );
    std::fs::write(&config, r#"{"conect": ["tcp/127.0.0.1:7447"]}"#).unwrap();
    refused(&dir, &["--config", c], 2, "did you mean \"connect\"?");
}

/// `shmcast bridge ARGS` run in `cwd` with no `--dir` and `SHMCAST_DIR` set to `shmcast_dir`:
/// its exit code and standard error.
fn bridge_in(cwd: &Path, shmcast_dir: &str, args: &[&str]) -> (i32, String) {
    let out = run({
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmcast"));
        cmd.current_dir(cwd)
            .env("SHMCAST_DIR", shmcast_dir)
            .arg("bridge")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    });
    (
        code(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A relative `SHMCAST_DIR` is a wrong setting for the bridge as for every command (exit code
/// 2), refused before anything is created there.
#[test]
fn a_relative_shmcast_dir_is_a_usage_error() {
    let dir = scratch("bridge-relative-env");
    let (exit, err) = bridge_in(&dir, "rel", &["--export", "t"]);
    assert_eq!(exit, 2, "{err}");
    assert_eq!(
        err,
        "shmcast: bridge: SHMCAST_DIR=rel is not an absolute path: processes in other working \
         directories would look for topics elsewhere\n"
    );
    assert!(!dir.join("rel").exists());
}

/// The file's `directory` is an absolute path, as `SHMCAST_DIR` must be: a relative or an
/// empty one is refused with the file (exit code 2, the field named), and nothing is created.
#[test]
fn a_files_directory_must_be_an_absolute_path() {
    let dir = scratch("bridge-file-directory");
    let config = dir.join("c.json");
    let c = config.to_str().unwrap();
    let env = dir.to_str().unwrap();
    for (directory, want) in [
        (
            "rel",
            "c.json: directory: \"rel\" is not an absolute path: the bridge would resolve it \
             against its working directory",
        ),
        ("", "c.json: directory: must not be empty"),
    ] {
        std::fs::write(
            &config,
            format!(
                r#"{{"directory": "{directory}",
                     "topics": [{{"topic": "t", "direction": "import", "bytes": true,
                                  "max_message": 64}}]}}"#
            ),
        )
        .unwrap();
        let (exit, err) = bridge_in(&dir, env, &["--config", c]);
        assert_eq!(exit, 2, "{directory:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{directory:?}: {err}");
        assert!(!dir.join("rel").exists(), "{directory:?}: ./rel created");
    }
}

/// A `--config` file that cannot be read is a wrong flag, as one that does not parse is: exit
/// code 2, `--config` named.
#[test]
fn a_config_file_that_cannot_be_read_names_the_flag() {
    let dir = scratch("bridge-no-config");
    let missing = dir.join("nonexistent.json");
    let m = missing.to_str().unwrap();
    refused(
        &dir,
        &["--config", m],
        2,
        &format!("shmcast: --config {m}: No such file or directory"),
    );
    refused(
        &dir,
        &["--config", dir.to_str().unwrap()],
        2,
        "shmcast: --config ",
    );
}

/// `--stats` takes a number of seconds as every flag of seconds does: NaN, an endless, a
/// negative or an absurdly large one is refused (exit code 2), not read as no periodic stats.
#[test]
fn stats_that_are_no_number_of_seconds_are_refused() {
    let dir = scratch("bridge-stats");
    for (value, why) in [
        ("nan", "not a number of seconds"),
        ("inf", "too large"),
        ("1e300", "too large"),
        ("1e10", "too large"),
        ("-1", "must not be negative"),
    ] {
        let flag = format!("--stats={value}");
        refused(&dir, &["--export", "t", &flag], 2, "shmcast: --stats ");
        let out = run(shmcast(&dir, &["bridge", "--export", "t", &flag]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{value}: {err}");
    }
}

/// A value of the wrong type in a file, `null` included, is told what its field takes.
#[test]
fn a_null_in_a_file_is_told_what_its_field_takes() {
    let dir = scratch("bridge-null");
    let config = dir.join("c.json");
    let c = config.to_str().unwrap();
    for (field, want) in [
        (
            "reliability",
            r#"c.json: topics[0].reliability: "reliable" or "lossy""#,
        ),
        (
            "max_message",
            "c.json: topics[0].max_message: a number of bytes",
        ),
        (
            "key",
            "c.json: topics[0].key: a string: the Zenoh key expression",
        ),
    ] {
        std::fs::write(
            &config,
            format!(r#"{{"topics": [{{"topic": "a", "direction": "import", "{field}": null}}]}}"#),
        )
        .unwrap();
        refused(&dir, &["--config", c], 2, want);
    }
}
