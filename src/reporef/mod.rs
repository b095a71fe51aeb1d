//! reporef (placeholder until its issue lands).
