//! Decoders of data GSP-RM, FSP and libos write: RPC message split + typed decode (replies
//! and every event), the CPU sequencer, the FSP reply, the libos log buffer. Must never
//! panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_gsp::abi::RpcMessageHeader;
use nvbare_gsp::libos::{LoggingImage, decode_records, raw_log};
use nvbare_gsp::rpc::events::decode_message;
use nvbare_gsp::rpc::split_message;
use zerocopy::FromBytes;

fuzz_target!(|data: &[u8]| {
    if let Ok((hdr, payload)) = split_message(data) {
        let _ = decode_message(&hdr, payload);
    }
    // Every function number the first 4 bytes select, with the rest as payload, so events
    // are reached without a valid signature.
    if let Ok((hdr, rest)) = RpcMessageHeader::read_from_prefix(data) {
        let mut h = hdr;
        h.function = 0x1000 | (hdr.function & 0x3f);
        let _ = decode_message(&h, rest);
        h.function = hdr.function & 0xff;
        let _ = decode_message(&h, rest);
    }
    let _ = nvbare_gsp::sequencer::decode_sequencer(data);
    let _ = nvbare_gsp::fsp::parse_response(data);
    if let Ok(raw) = raw_log(&data[..data.len() & !7]) {
        let _ = format!("{raw}");
    }
    // A logging image made of the input itself at a fixed VA, so metadata lookups hit.
    let img = LoggingImage::new(vec![(0x1000, data)]);
    if let Ok(recs) = decode_records(&data[..data.len() & !7], &img) {
        for r in recs {
            let _ = r.render(&img);
        }
    }
});
