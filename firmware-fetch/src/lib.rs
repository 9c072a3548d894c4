//! nvbare-firmware-fetch: locate, download, verify and cache GSP-RM firmware.
