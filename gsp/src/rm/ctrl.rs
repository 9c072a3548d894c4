//! Control commands (filled in next).
