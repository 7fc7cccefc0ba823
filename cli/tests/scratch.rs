//! The tests' own hygiene: a test's scratch directory goes when the test ends, with whatever the
//! processes it ran left there (the socket of a publisher killed as its guard dropped).

mod common;

use common::{Proc, scratch, shmcast, stat_with};

#[test]
fn a_scratch_directory_is_removed_when_its_test_ends() {
    let path = {
        let dir = scratch("scratch");
        let publisher = Proc::spawn(shmcast(&dir, &["pub", "t", "--rate", "10"]));
        stat_with(&dir, "t", 0);
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub").join("file"), b"x").unwrap();
        drop(publisher);
        assert!(dir.join("t").exists(), "the killed publisher's socket");
        dir.to_path_buf()
    };
    assert!(!path.exists(), "{} left behind", path.display());
}
