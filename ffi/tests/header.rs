//! The checked-in `include/shmcast.h` is exactly what cbindgen makes of the sources, it
//! compiles without a warning as C99 and as C++, and its option structs keep their layout.
//!
//! After changing the ABI, regenerate it with
//! `SHMCAST_BLESS=1 cargo test -p shmcast-ffi --test header`.

mod support;

use std::ffi::OsStr;
use support::{C_FLAGS, CXX_FLAGS, include_dir, manifest_dir, out_dir, run_compiler};

fn generate() -> String {
    let dir = manifest_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("reading cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen failed: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen writes UTF-8")
}

#[test]
fn header_is_up_to_date() {
    let path = include_dir().join("shmcast.h");
    let fresh = generate();
    if std::env::var_os("SHMCAST_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("write the header");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != fresh {
        let first = current
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(fresh.lines().count()));
        panic!(
            "{} is out of date (first difference at line {}): run \
             `SHMCAST_BLESS=1 cargo test -p shmcast-ffi --test header` and commit the result",
            path.display(),
            first + 1
        );
    }
}

#[test]
fn every_function_is_documented() {
    let header = generate();
    let lines: Vec<&str> = header.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.contains("shmcast_") && line.contains('(') && !line.starts_with([' ', '*', '/']) {
            let above = lines[..i].iter().rev().find(|l| !l.trim().is_empty());
            assert!(
                above.is_some_and(|l| l.trim_start().starts_with('*')),
                "undocumented declaration in the header: {line}"
            );
        }
    }
}

fn check_compiles(compiler: &str, flags: &[&str], lang: &str) {
    let src = out_dir().join(format!("header_only_{lang}.c"));
    std::fs::write(
        &src,
        "#include <shmcast.h>\nint main(void) {\n    shmcast_publisher_options o;\n    \
         return shmcast_publisher_options_init(&o) == SHMCAST_OK ? 0 : 1;\n}\n",
    )
    .expect("write the test source");
    syntax_check(compiler, flags, lang, &src);
}

/// Compiles `src` as `lang` against the header without generating code.
fn syntax_check(compiler: &str, flags: &[&str], lang: &str, src: &std::path::Path) {
    let include = format!("-I{}", include_dir().display());
    let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
    args.extend(["-fsyntax-only", "-x", lang].map(OsStr::new));
    args.push(OsStr::new(&include));
    args.push(src.as_os_str());
    run_compiler(compiler, &args);
}

/// `tests/c/layout.c`: the sizes and offsets of the option structs, as C and as C++.
#[test]
fn option_structs_keep_their_layout() {
    let src = manifest_dir().join("tests/c/layout.c");
    syntax_check("cc", C_FLAGS, "c", &src);
    syntax_check("c++", CXX_FLAGS, "c++", &src);
}

#[test]
fn header_compiles_as_c99() {
    check_compiles("cc", C_FLAGS, "c");
}

#[test]
fn header_compiles_as_cxx() {
    check_compiles("c++", CXX_FLAGS, "c++");
}
