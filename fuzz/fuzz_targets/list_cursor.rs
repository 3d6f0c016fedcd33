//! The list cursor decoder never panics, and decode ∘ encode is the identity
//! on everything it accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use page_import::domain::cursor;

fuzz_target!(|input: &str| {
    if let Some(position) = cursor::decode(input) {
        assert_eq!(cursor::decode(&cursor::encode(&position)), Some(position));
    }
});
