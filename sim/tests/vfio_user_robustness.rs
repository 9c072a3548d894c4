//! The vfio-user server against malformed input: a broken header, an unknown command, a
//! command before VERSION or a hostile payload gets an error reply and a closed connection; a
//! refused request keeps it; the server serves on. The decoder itself never panics on any
//! bytes (also fuzzed: `sim/fuzz`, `vfio_user_decode`).

mod vfio_user_client;

use nvbare_sim::SimChip;
use nvbare_sim::vfio_user::protocol::{self, Command, Header};
use proptest::prelude::*;
use vfio_user_client::*;

#[test]
fn malformed_messages_close_the_connection_and_the_server_serves_on() {
    let srv = server(SimChip::Gh100, "malformed");
    let header = |cmd: u16, size: u32, flags: u32| {
        Header {
            id: 7,
            command: cmd,
            size,
            flags,
            error: 0,
        }
        .to_bytes()
        .to_vec()
    };
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("size below the header", header(1, 8, 0), false),
        ("size beyond the limit", header(9, u32::MAX, 0), false),
        ("a reply sent as a request", header(1, 16, 1), false),
        ("an unknown command", header(99, 16, 0), true),
        (
            "a command before VERSION",
            header(4, 20, 0).into_iter().chain([16, 0, 0, 0]).collect(),
            false,
        ),
    ];
    for (what, bytes, version_first) in cases {
        let mut c = Client::connect(&srv);
        if version_first {
            c.version();
        }
        c.raw(&bytes, &[]);
        let r = c.recv().unwrap_or_else(|| panic!("{what}: an error reply"));
        assert_ne!(r.0.flags & protocol::FLAG_ERROR, 0, "{what}");
        assert!(c.closed(), "{what}: connection closed");
    }
    // Negotiated, then hostile payloads.
    let after_version: Vec<(&str, Command, Vec<u8>)> = vec![
        ("a short DMA_MAP", Command::DmaMap, vec![0; 20]),
        (
            "a REGION_READ over the transfer limit",
            Command::RegionRead,
            access(0, 0, u32::MAX),
        ),
        (
            "a REGION_WRITE whose count lies",
            Command::RegionWrite,
            access(1, 0, 100),
        ),
        ("a RESET with a payload", Command::DeviceReset, vec![1]),
    ];
    for (what, cmd, payload) in after_version {
        let mut c = Client::connect(&srv);
        c.version();
        c.send(cmd, &payload, &[]);
        let r = c.recv().unwrap_or_else(|| panic!("{what}: an error reply"));
        assert_ne!(r.0.flags & protocol::FLAG_ERROR, 0, "{what}");
        assert!(c.closed(), "{what}: connection closed");
    }
    // Refused requests keep the connection.
    let mut c = Client::connect(&srv);
    c.version();
    let refused: Vec<(&str, Command, Vec<u8>)> = vec![
        (
            "a read past BAR0",
            Command::RegionRead,
            access(0, 16 << 20, 4),
        ),
        (
            "a read of a missing region",
            Command::RegionRead,
            access(5, 0, 4),
        ),
        ("BAR3", Command::RegionRead, access(3, 0, 4)),
        (
            "a BAR0 write of 2 bytes",
            Command::RegionWrite,
            [access(0, 0, 2), vec![1, 2]].concat(),
        ),
        ("DMA_READ (server to client only)", Command::DmaRead, vec![]),
    ];
    for (what, cmd, payload) in refused {
        let (h, _) = c.call(cmd, &payload, &[]);
        assert_ne!(h.flags & protocol::FLAG_ERROR, 0, "{what}");
        assert_ne!(h.error, 0, "{what}: an errno");
    }
    assert_eq!(
        u32_at(&c.region_read(7, 0, 4), 0),
        0x2335_10de,
        "still serving"
    );
    assert_eq!(srv.refusals().len(), 5, "{:?}", srv.refusals());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Any bytes: decode answers a request or an error, never panics, and a request it accepts
    /// lies inside the payload it was given.
    #[test]
    fn decode_never_panics(cmd in 0u16..16, flags in 0u32..64, payload in proptest::collection::vec(any::<u8>(), 0..96), lie in 0u32..3) {
        let size = (16 + payload.len() as u32).wrapping_add(lie).wrapping_sub(1);
        let h = Header { id: 1, command: cmd, size, flags, error: 0 };
        if let Ok(protocol::Request::RegionWrite { data, .. }) = protocol::decode(&h, &payload) {
            prop_assert_eq!(data.len() + 16, payload.len());
        }
    }
}
