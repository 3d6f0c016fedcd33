//! The source URL normalizer never panics, and what it accepts is a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use page_import::domain::{SourceUrl, SourceUrlPolicy};

fuzz_target!(|input: &str| {
    for allow_private in [false, true] {
        let policy = SourceUrlPolicy { allow_private };
        if let Ok(url) = SourceUrl::parse(input, policy) {
            let again = SourceUrl::parse(url.as_str(), policy).expect("a normalized URL is accepted again");
            assert_eq!(again.as_str(), url.as_str(), "normalization is idempotent");
            assert!(!url.as_str().contains('#'), "fragments are removed");
        }
    }
});
