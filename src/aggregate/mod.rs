//! aggregate (placeholder until its issue lands).
