//! Local HTTP page server for fetcher tests (owned by the source fetcher work).
