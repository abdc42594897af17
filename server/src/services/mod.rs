//! The services: what runs over the state, for the handlers and on its own
//! — the bulk decisions, the dedup hooks, the live feed's watchers, the rendition workers, the
//! sweeper, and the views the answers are made of.

pub mod bulk;
pub mod dedup;
pub mod live;
pub mod renditions;
pub mod sweeper;
pub mod uploads;
pub mod views;
