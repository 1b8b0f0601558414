//! SQLite adapter of the store ports (embedded default). Not built yet: see issue "Storage".
