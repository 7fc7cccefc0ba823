//! The frame decoder over any header word, position and commit bound in rings of every size, and
//! a reader over a ring with a valid static header and fuzzed positions, control block and
//! frames, read with `try_peek` and `try_copy` until it stops.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shmcast_core::frame::{FRAME_TAG, Kind, decode_header};
use shmcast_fuzz::drive::drive;
use shmcast_fuzz::input::FrameInput;

fuzz_target!(|data: &[u8]| {
    let input = FrameInput::parse(data);

    let (cfg, meta, pos, committed) = input.decode_case();
    if let Ok((kind, len, span)) = decode_header(&cfg, meta, pos, committed) {
        // The bounds the reader's unchecked offsets rely on.
        let room = cfg.capacity() - pos % cfg.capacity();
        assert_eq!(meta >> 40, FRAME_TAG);
        assert!(span <= room && 16 + u64::from(len) <= span);
        assert!(pos.checked_add(span).is_some_and(|end| end <= committed));
        match kind {
            Kind::Message => {
                assert!(len as usize <= cfg.max_payload());
                assert_eq!(span, 16 + u64::from(len).next_multiple_of(16));
            }
            Kind::Padding => assert_eq!(span, room),
        }
    }

    let (ring, cb) = input.regions();
    let _ = drive(ring, cb, input.schedule, input.writer_gone());
});
