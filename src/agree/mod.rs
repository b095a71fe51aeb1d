//! agree (placeholder until its issue lands).
