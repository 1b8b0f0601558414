//! Postgres adapter of the store ports (many replicas). Not built yet: see issue "Storage".
