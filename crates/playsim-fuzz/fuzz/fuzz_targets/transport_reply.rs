#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| playsim_fuzz::transport_reply(data));
