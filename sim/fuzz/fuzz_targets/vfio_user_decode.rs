//! Any bytes as a stream of vfio-user messages, as a hostile client sends them: the header is
//! checked before its payload is taken, decode answers a request or an error and never
//! panics, and what it accepts lies inside the bytes it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_sim::vfio_user::protocol::{self, HEADER_LEN, Header, Request};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while rest.len() >= HEADER_LEN {
        let h = Header::parse(rest[..HEADER_LEN].try_into().unwrap());
        if protocol::check_request(&h).is_err() {
            return;
        }
        let end = (h.size as usize).min(rest.len());
        let payload = &rest[HEADER_LEN..end];
        match protocol::decode(&h, payload) {
            Ok(Request::RegionWrite { data, .. }) => assert_eq!(data.len() + 16, payload.len()),
            Ok(Request::RegionRead { count, .. }) => assert!(count <= protocol::MAX_DATA_XFER),
            Ok(_) | Err(_) => {}
        }
        rest = &rest[end..];
    }
});
