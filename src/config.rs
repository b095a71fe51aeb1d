//! Configuration shared by commands: flags, then environment, then `tvir.toml`.
