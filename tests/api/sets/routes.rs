//! The set's routes and what each answers (SPEC §15).
