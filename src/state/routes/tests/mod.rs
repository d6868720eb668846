//! The route tables' unit tests, one file per kind of operation.

mod evict;
mod query;
mod register;
mod same;
