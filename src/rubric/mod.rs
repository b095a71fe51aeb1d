//! rubric (placeholder until its issue lands).
