//! Storage PUTs being received: a pool of their own, apart from the API's
//! requests (so uploads that crawl cannot stop every other request), shared
//! fairly between the events and, within an event, its guest sessions.
//!
//! The guest code is public, so one event's code may be a hostile script's
//! (from many addresses, each PUT just fast enough not to be cut). The pool
//! is split only when it runs short:
//!
//! - an event alone on the server may use every slot (a festival's peak
//!   needs them);
//! - each event sending now has a fair share, `max / events sending` (the
//!   one asking counted), and within it each of its sessions sending has
//!   `event share / sessions sending`;
//! - a PUT past its session's share is refused (`429`, retried later); a PUT
//!   within its shares is admitted, and when the pool is full (or its event
//!   is at its share) room is made: the newest PUT of the session furthest
//!   over its share (of the event furthest over its share, else of its own
//!   event) is **cut** (`429` with `Retry-After`, the client sends it again
//!   later), so a flood through one event's code never keeps another event's
//!   uploads out, and one session never keeps the rest of its event out.
//!
//! Beside the shares: a cap per client address, and one PUT per signed
//! target (an object, or one part of it) at a time, so one URL cannot hold
//! many slots.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::config::limits::LimitsConfig;
use crate::limits::rate_key;

/// Who a storage PUT is for: known once its signed URL is checked and its
/// attempt read.
#[derive(Clone, Debug)]
pub struct PutClaim {
    /// The client's address (counted per [`rate_key`]).
    pub client: Option<IpAddr>,
    /// What it writes ([`crate::limits::put_target`]).
    pub target: String,
    /// The attempt's event.
    pub event_id: i64,
    /// The attempt's session.
    pub session_id: i64,
}

/// Why a PUT got no slot (each a `429` with `Retry-After`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The same object (or part) is being received already.
    TargetBusy,
    /// Its client address holds `--max-puts-per-client`.
    ClientFull,
    /// Its session holds its fair share.
    SessionShare,
    /// The pool is full and nobody holds more than their share.
    Full,
}

impl Refused {
    /// The sentence for the answer.
    pub fn detail(self) -> &'static str {
        match self {
            Refused::TargetBusy => "this URL is already receiving an upload; one at a time",
            Refused::ClientFull => "this address is sending as many uploads as it may at once; try again in a moment",
            Refused::SessionShare => {
                "this guest is sending its share of the uploads the server receives at once; try again in a moment"
            }
            Refused::Full => "the server is receiving as many uploads as it may; try again in a moment",
        }
    }
}

#[derive(Debug)]
struct Held {
    id: u64,
    /// Told when this PUT is cut to make room for another.
    cut: Arc<Notify>,
    /// Cut already: no longer counted, its slot given back when it ends.
    cutting: bool,
}

#[derive(Debug, Default)]
struct PutsHeld {
    /// PUTs counted (not being cut).
    total: u64,
    per_client: HashMap<IpAddr, u64>,
    targets: HashSet<String>,
    /// By event, then session, oldest first.
    events: HashMap<i64, HashMap<i64, Vec<Held>>>,
    next_id: u64,
}

fn counted(list: &[Held]) -> u64 {
    list.iter().filter(|h| !h.cutting).count() as u64
}

fn event_count(sessions: &HashMap<i64, Vec<Held>>) -> u64 {
    sessions.values().map(|l| counted(l)).sum()
}

impl PutsHeld {
    /// Events and sessions sending now, as the shares count them.
    fn sending(&self, event: i64) -> (u64, u64) {
        let events = self.events.values().filter(|s| event_count(s) > 0).count() as u64;
        let sessions = self.events.get(&event).map_or(0, |s| s.values().filter(|l| counted(l) > 0).count() as u64);
        (events, sessions)
    }

    /// The newest counted PUT of the session of `event` furthest over
    /// `session_share`, if one is over it.
    fn over_in_event(&mut self, event: i64, session_share: u64) -> Option<&mut Held> {
        let sessions = self.events.get_mut(&event)?;
        let (_, list) = sessions
            .iter_mut()
            .map(|(s, l)| (*s, l))
            .filter(|(_, l)| counted(l) > session_share)
            .max_by_key(|(s, l)| (counted(l), std::cmp::Reverse(*s)))?;
        list.iter_mut().rev().find(|h| !h.cutting)
    }
}

/// The pool of storage PUT slots.
#[derive(Debug, Default)]
pub struct PutSlots {
    held: Mutex<PutsHeld>,
}

/// A storage PUT's slot: given back when dropped. [`PutSlot::cut`] tells
/// when it is cut to make room for another event's or session's.
pub struct PutSlot<'a> {
    slots: &'a PutSlots,
    client: Option<IpAddr>,
    target: String,
    event_id: i64,
    session_id: i64,
    id: u64,
    cut: Arc<Notify>,
}

impl PutSlot<'_> {
    /// Notified (a stored permit: never missed) when this PUT is to stop.
    pub fn cut(&self) -> Arc<Notify> {
        self.cut.clone()
    }
}

impl PutSlots {
    /// Storage PUTs being received now (those being cut included).
    pub fn in_flight(&self) -> u64 {
        let held = self.held.lock().expect("put slots");
        held.events.values().flat_map(|s| s.values()).map(|l| l.len() as u64).sum()
    }

    /// A slot for `claim`, or why not; may cut another PUT to make room
    /// (see the module's documentation).
    pub fn take<'a>(&'a self, claim: PutClaim, config: &LimitsConfig) -> Result<PutSlot<'a>, Refused> {
        let mut held = self.held.lock().expect("put slots");
        let max = config.max_puts_in_flight.max(1);
        if held.targets.contains(&claim.target) {
            return Err(Refused::TargetBusy);
        }
        let key = claim.client.map(rate_key);
        if key.is_some_and(|k| held.per_client.get(&k).copied().unwrap_or(0) >= config.max_puts_per_client) {
            return Err(Refused::ClientFull);
        }
        let (event, session) = (claim.event_id, claim.session_id);
        let (events, sessions) = held.sending(event);
        let own = held.events.get(&event);
        let event_held = own.map_or(0, event_count);
        let session_held = own.and_then(|s| s.get(&session)).map_or(0, |l| counted(l));
        // The shares, the one asking counted among those sending.
        let event_share = max.div_ceil(events + u64::from(event_held == 0));
        let session_share = event_share.div_ceil(sessions + u64::from(session_held == 0));
        if session_held >= session_share {
            return Err(Refused::SessionShare);
        }
        if held.total >= max || event_held >= event_share {
            // Room is made by another event over its share (only when this
            // event is within its own), else by a session of this event over
            // its share.
            let from_other = if event_held < event_share {
                let other = held
                    .events
                    .iter()
                    .filter(|(e, s)| **e != event && event_count(s) > event_share)
                    .max_by_key(|(e, s)| (event_count(s), std::cmp::Reverse(**e)))
                    .map(|(e, s)| (*e, s.values().filter(|l| counted(l) > 0).count() as u64));
                other.map(|(e, their_sessions)| (e, event_share.div_ceil(their_sessions.max(1))))
            } else {
                None
            };
            let victim = match from_other {
                Some((e, their_share)) => {
                    // Its session furthest over its share, else its largest.
                    if held.over_in_event(e, their_share).is_some() {
                        held.over_in_event(e, their_share)
                    } else {
                        held.over_in_event(e, 0)
                    }
                }
                None => held.over_in_event(event, session_share),
            };
            let Some(victim) = victim else { return Err(Refused::Full) };
            victim.cutting = true;
            victim.cut.notify_one();
            held.total -= 1;
        }
        held.targets.insert(claim.target.clone());
        held.total += 1;
        if let Some(k) = key {
            *held.per_client.entry(k).or_default() += 1;
        }
        held.next_id += 1;
        let id = held.next_id;
        let cut = Arc::new(Notify::new());
        held.events.entry(event).or_default().entry(session).or_default().push(Held {
            id,
            cut: cut.clone(),
            cutting: false,
        });
        Ok(PutSlot { slots: self, client: key, target: claim.target, event_id: event, session_id: session, id, cut })
    }
}

impl Drop for PutSlot<'_> {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().expect("put slots");
        held.targets.remove(&self.target);
        if let Some(k) = self.client {
            if let Some(n) = held.per_client.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    held.per_client.remove(&k);
                }
            }
        }
        let mut was_counted = false;
        if let Some(sessions) = held.events.get_mut(&self.event_id) {
            if let Some(list) = sessions.get_mut(&self.session_id) {
                if let Some(at) = list.iter().position(|h| h.id == self.id) {
                    was_counted = !list.remove(at).cutting;
                }
                if list.is_empty() {
                    sessions.remove(&self.session_id);
                }
            }
            if sessions.is_empty() {
                held.events.remove(&self.event_id);
            }
        }
        if was_counted {
            held.total -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(max: u64) -> LimitsConfig {
        let mut config = crate::config::Config::parse_from(["upload-once-server"]).limits;
        config.max_puts_in_flight = max;
        config.max_puts_per_client = max;
        config
    }

    fn claim(n: u32, event: i64, session: i64) -> PutClaim {
        PutClaim { client: None, target: format!("t{n}"), event_id: event, session_id: session }
    }

    #[test]
    fn an_event_alone_uses_every_slot_and_another_event_gets_its_share() {
        let slots = PutSlots::default();
        let config = config(4);
        // Event 1, a hostile session: every slot, since nobody else sends.
        let flood: Vec<_> = (0..4).map(|n| slots.take(claim(n, 1, 10), &config).unwrap()).collect();
        // Event 2 asks: one of the flood's PUTs is cut to make room.
        let honest = slots.take(claim(10, 2, 20), &config).unwrap();
        let cut: Vec<bool> = flood.iter().map(|s| s.cut.notified().now_or_never().is_some()).collect();
        assert_eq!(cut.iter().filter(|c| **c).count(), 1, "one of the flood's was cut: {cut:?}");
        assert!(cut[3], "the newest");
        // The flood's next PUT is over its event's share (2 of 4) and its
        // session's: refused, as long as the others hold theirs.
        assert_eq!(slots.take(claim(5, 1, 10), &config).err(), Some(Refused::SessionShare));
        // A second honest PUT of event 2 makes room again (event 1 still
        // holds 3 counted > 2).
        let _second = slots.take(claim(11, 2, 20), &config).unwrap();
        assert!(flood[2].cut.notified().now_or_never().is_some());
        drop(honest);
    }

    #[test]
    fn one_session_cannot_keep_the_rest_of_its_event_out() {
        let slots = PutSlots::default();
        let config = config(4);
        let hog: Vec<_> = (0..4).map(|n| slots.take(claim(n, 1, 10), &config).unwrap()).collect();
        // Another guest of the same event: half of the event's share.
        let _guest = slots.take(claim(10, 1, 11), &config).unwrap();
        assert!(hog[3].cut.notified().now_or_never().is_some());
        let _again = slots.take(claim(11, 1, 11), &config).unwrap();
        assert!(hog[2].cut.notified().now_or_never().is_some());
        assert_eq!(slots.take(claim(12, 1, 11), &config).err(), Some(Refused::SessionShare), "2 of 4 each");
        assert_eq!(slots.take(claim(13, 1, 10), &config).err(), Some(Refused::SessionShare));
    }

    #[test]
    fn slots_are_given_back_and_one_target_holds_one() {
        let slots = PutSlots::default();
        let config = config(2);
        let a = slots.take(claim(1, 1, 1), &config).unwrap();
        assert_eq!(slots.take(claim(1, 2, 2), &config).err(), Some(Refused::TargetBusy));
        let b = slots.take(claim(2, 1, 1), &config).unwrap();
        assert_eq!(slots.in_flight(), 2);
        drop((a, b));
        assert_eq!(slots.in_flight(), 0);
        let held = slots.held.lock().unwrap();
        assert!(held.events.is_empty() && held.targets.is_empty() && held.total == 0);
    }

    use futures_util::FutureExt;
}
