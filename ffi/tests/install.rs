//! `make -C ffi install` into a temporary prefix gives a C user everything: the header, the
//! shared library with its SONAME and version links, the static library and a pkg-config file.
//! The examples are then built from a copy outside the source tree with the flags pkg-config
//! gives for the installed files only, and run against each other.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::Runner;

/// The whole install builds the library in its own profile: minutes on a loaded machine.
const INSTALL_LIMIT: Duration = Duration::from_secs(1200);

fn tool_available(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` to completion, killing it (and failing the test) after `limit`.
fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let start = Instant::now();
    while child.try_wait().expect("wait for the child").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect the output");
            panic!(
                "{what} still running after {limit:?}; killed. stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("collect the output");
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let mut cmd = Command::new("pkg-config");
    cmd.args(args)
        .arg("shmcast")
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .env_remove("PKG_CONFIG_LIBDIR");
    let out = run_bounded(cmd, Duration::from_secs(30));
    String::from_utf8(out.stdout)
        .expect("pkg-config prints text")
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn dynamic_section(file: &Path) -> String {
    let mut cmd = Command::new("readelf");
    cmd.arg("-d").arg(file);
    String::from_utf8(run_bounded(cmd, Duration::from_secs(30)).stdout).unwrap()
}

fn section_headers(file: &Path) -> String {
    let mut cmd = Command::new("readelf");
    cmd.arg("-S").arg(file);
    String::from_utf8(run_bounded(cmd, Duration::from_secs(30)).stdout).unwrap()
}

fn compile(source: &Path, exe: &Path, flags: &[String]) {
    let mut cmd = Command::new("cc");
    cmd.args(support::C_FLAGS)
        .arg(source)
        .arg("-o")
        .arg(exe)
        .args(flags);
    run_bounded(cmd, Duration::from_secs(120));
}

/// Publishes five messages from `publisher` to `subscriber` and checks both sides' output.
fn exchange(publisher: &Path, subscriber: &Path, topic: &str) {
    let r = Runner { valgrind: false };
    let mut sub = r.spawn(subscriber, &[topic]);
    let published = r.spawn(publisher, &[topic, "5", "1"]).wait();
    published.assert_success();
    assert!(
        published
            .stdout
            .contains("published 5 messages to 1 subscribers"),
        "publisher output: {}",
        published.stdout
    );
    sub.expect_line("#0: tick 0");
    sub.expect_line("#4: tick 4");
    sub.expect_line("publisher gone");
    sub.wait().assert_success();
}

#[test]
fn installed_library_builds_and_runs_the_examples() {
    for tool in ["make", "pkg-config", "readelf"] {
        if !tool_available(tool) {
            eprintln!("SKIPPED: {tool} is not installed");
            return;
        }
    }
    let root = support::out_dir().join(format!("install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let prefix = root.join("usr");
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();

    let mut make = Command::new("make");
    make.arg("-C")
        .arg(support::manifest_dir())
        .arg("install")
        .arg(format!("PREFIX={}", prefix.display()))
        .arg(format!("CARGO={}", env!("CARGO")));
    run_bounded(make, INSTALL_LIMIT);

    let version = env!("CARGO_PKG_VERSION");
    let abi = if env!("CARGO_PKG_VERSION_MAJOR") == "0" {
        format!("0.{}", env!("CARGO_PKG_VERSION_MINOR"))
    } else {
        env!("CARGO_PKG_VERSION_MAJOR").to_owned()
    };
    let soname = format!("libshmcast.so.{abi}");
    let lib = prefix.join("lib");
    let real = lib.join(format!("libshmcast.so.{version}"));
    assert!(prefix.join("include/shmcast.h").is_file());
    assert!(lib.join("libshmcast.a").is_file());
    assert!(real.is_file());
    assert_eq!(
        std::fs::read_link(lib.join(&soname)).unwrap(),
        PathBuf::from(format!("libshmcast.so.{version}"))
    );
    assert_eq!(
        std::fs::read_link(lib.join("libshmcast.so")).unwrap(),
        PathBuf::from(&soname)
    );
    let dynamic = dynamic_section(&real);
    assert!(
        dynamic.contains(&format!("Library soname: [{soname}]")),
        "no SONAME {soname} in:\n{dynamic}"
    );
    let sections = section_headers(&real);
    assert!(
        !sections.contains(".debug_info"),
        "the installed library carries debug information:\n{sections}"
    );

    // The examples as a user would build them: their own copy, flags from pkg-config only.
    for name in ["publisher.c", "subscriber.c"] {
        std::fs::copy(
            support::manifest_dir().join("examples").join(name),
            src.join(name),
        )
        .unwrap();
    }
    let cflags = pkg_config(&prefix, &["--cflags"]);
    let mut shared = cflags.clone();
    shared.extend(pkg_config(&prefix, &["--libs"]));
    // A prefix outside the loader's search path: the program records where the library is.
    shared.push(format!("-Wl,-rpath,{}", lib.display()));
    let (publisher, subscriber) = (src.join("publisher"), src.join("subscriber"));
    compile(&src.join("publisher.c"), &publisher, &shared);
    compile(&src.join("subscriber.c"), &subscriber, &shared);
    let needed = dynamic_section(&subscriber);
    assert!(
        needed.contains(&format!("Shared library: [{soname}]")),
        "the program does not record the SONAME:\n{needed}"
    );
    exchange(
        &publisher,
        &subscriber,
        &format!("ffi-{}-installed", std::process::id()),
    );

    // Static: the archive by path, and the system libraries pkg-config lists for it.
    let libdir = pkg_config(&prefix, &["--variable=libdir"]).join("");
    let mut static_flags = cflags;
    static_flags.push(format!("{libdir}/libshmcast.a"));
    static_flags.extend(
        pkg_config(&prefix, &["--static", "--libs-only-l"])
            .into_iter()
            .filter(|f| f != "-lshmcast"),
    );
    let static_subscriber = src.join("subscriber-static");
    compile(&src.join("subscriber.c"), &static_subscriber, &static_flags);
    assert!(
        !dynamic_section(&static_subscriber).contains("libshmcast"),
        "the static program still needs the shared library"
    );
    exchange(
        &publisher,
        &static_subscriber,
        &format!("ffi-{}-installed-static", std::process::id()),
    );

    let mut uninstall = Command::new("make");
    uninstall
        .arg("-C")
        .arg(support::manifest_dir())
        .arg("uninstall")
        .arg(format!("PREFIX={}", prefix.display()));
    run_bounded(uninstall, Duration::from_secs(60));
    for gone in [
        prefix.join("include/shmcast.h"),
        lib.join("libshmcast.a"),
        lib.join("libshmcast.so"),
        lib.join(&soname),
        real,
        lib.join("pkgconfig/shmcast.pc"),
    ] {
        assert!(
            std::fs::symlink_metadata(&gone).is_err(),
            "{} left after uninstall",
            gone.display()
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
