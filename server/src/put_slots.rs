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
//! - while the pool has a free slot, a PUT takes it, whoever sends it;
//! - when it is full, a PUT past its session's share is refused (`429`,
//!   retried later), and a PUT within its shares makes room: the newest PUT
//!   of the session furthest over its share (of the event furthest over its
//!   share, else of its own event) is **cut** (`429` with `Retry-After`, the
//!   client sends it again later), so a flood through one event's code never
//!   keeps another event's uploads out, and one session never keeps the rest
//!   of its event out.
//!
//! A PUT first [`PutSlots::reserve`]s its target and its client address's
//! count (no database read: a flood on one URL is refused before any), and
//! only once its attempt is read [`Reserved::admit`] applies the shares.
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
    /// PUTs being received, those being cut included, and those reserved
    /// and not yet admitted.
    all: u64,
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
    /// `session_share`, if one is over it: its session and place.
    fn over_in_event(&self, event: i64, session_share: u64) -> Option<(i64, usize)> {
        let (session, list) = self
            .events
            .get(&event)?
            .iter()
            .filter(|(_, l)| counted(l) > session_share)
            .max_by_key(|(s, l)| (counted(l), std::cmp::Reverse(**s)))?;
        Some((*session, list.iter().rposition(|h| !h.cutting)?))
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
        self.held.lock().expect("put slots").all
    }

    /// Reserves `target` and a place in `client`'s count, or why not: what
    /// needs no database read, checked before the attempt is read.
    pub fn reserve<'a>(
        &'a self,
        client: Option<IpAddr>,
        target: String,
        config: &LimitsConfig,
    ) -> Result<Reserved<'a>, Refused> {
        let mut held = self.held.lock().expect("put slots");
        if held.targets.contains(&target) {
            return Err(Refused::TargetBusy);
        }
        let key = client.map(rate_key);
        if key.is_some_and(|k| held.per_client.get(&k).copied().unwrap_or(0) >= config.max_puts_per_client) {
            return Err(Refused::ClientFull);
        }
        held.targets.insert(target.clone());
        if let Some(k) = key {
            *held.per_client.entry(k).or_default() += 1;
        }
        held.all += 1;
        Ok(Reserved { slots: self, client: key, target, admitted: false })
    }
}

/// A PUT's target and client count, reserved until it is admitted (or
/// given back when dropped).
pub struct Reserved<'a> {
    slots: &'a PutSlots,
    client: Option<IpAddr>,
    target: String,
    admitted: bool,
}

impl<'a> Reserved<'a> {
    /// A slot for this PUT of `session` of `event`, or why not; when the
    /// pool is full, by the shares, cutting another PUT to make room (see
    /// the module's documentation).
    pub fn admit(mut self, event: i64, session: i64, config: &LimitsConfig) -> Result<PutSlot<'a>, Refused> {
        let mut held = self.slots.held.lock().expect("put slots");
        let max = config.max_puts_in_flight.max(1);
        if held.total >= max {
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
            // Room is made by another event over its share (only when this
            // event is within its own), else by a session of this event over
            // its share.
            let from_other = if event_held < event_share {
                held.events
                    .iter()
                    .filter(|(e, s)| **e != event && event_count(s) > event_share)
                    .max_by_key(|(e, s)| (event_count(s), std::cmp::Reverse(**e)))
                    .map(|(e, s)| {
                        (*e, event_share.div_ceil(s.values().filter(|l| counted(l) > 0).count().max(1) as u64))
                    })
            } else {
                None
            };
            let victim = match from_other {
                // Its session furthest over its share, else its largest.
                Some((e, their_share)) => {
                    held.over_in_event(e, their_share).or_else(|| held.over_in_event(e, 0)).map(|v| (e, v))
                }
                None => held.over_in_event(event, session_share).map(|v| (event, v)),
            };
            let victim = victim.and_then(|(e, (s, at))| held.events.get_mut(&e)?.get_mut(&s)?.get_mut(at));
            let Some(victim) = victim else { return Err(Refused::Full) };
            victim.cutting = true;
            victim.cut.notify_one();
            held.total -= 1;
        }
        held.total += 1;
        held.next_id += 1;
        let id = held.next_id;
        let cut = Arc::new(Notify::new());
        held.events.entry(event).or_default().entry(session).or_default().push(Held {
            id,
            cut: cut.clone(),
            cutting: false,
        });
        drop(held);
        self.admitted = true;
        let target = std::mem::take(&mut self.target);
        Ok(PutSlot { slots: self.slots, client: self.client, target, event_id: event, session_id: session, id, cut })
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if self.admitted {
            // Its slot gives the target and the count back.
            return;
        }
        let mut held = self.slots.held.lock().expect("put slots");
        release(&mut held, &self.target, self.client);
    }
}

/// Gives back a PUT's target and its place in its client's count.
fn release(held: &mut PutsHeld, target: &str, client: Option<IpAddr>) {
    held.targets.remove(target);
    held.all -= 1;
    if let Some(k) = client {
        if let Some(n) = held.per_client.get_mut(&k) {
            *n -= 1;
            if *n == 0 {
                held.per_client.remove(&k);
            }
        }
    }
}

impl Drop for PutSlot<'_> {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().expect("put slots");
        release(&mut held, &self.target, self.client);
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

    /// A slot for PUT `n` of `session` of `event`, or why not.
    fn take<'a>(
        slots: &'a PutSlots,
        n: u32,
        event: i64,
        session: i64,
        config: &LimitsConfig,
    ) -> Result<PutSlot<'a>, Refused> {
        slots.reserve(None, format!("t{n}"), config)?.admit(event, session, config)
    }

    #[test]
    fn an_event_alone_uses_every_slot_and_another_event_gets_its_share() {
        let slots = PutSlots::default();
        let config = config(4);
        // Event 1, a hostile session: every slot, since nobody else sends.
        let flood: Vec<_> = (0..4).map(|n| take(&slots, n, 1, 10, &config).unwrap()).collect();
        // Event 2 asks: one of the flood's PUTs is cut to make room.
        let honest = take(&slots, 10, 2, 20, &config).unwrap();
        let cut: Vec<bool> = flood.iter().map(|s| s.cut.notified().now_or_never().is_some()).collect();
        assert_eq!(cut.iter().filter(|c| **c).count(), 1, "one of the flood's was cut: {cut:?}");
        assert!(cut[3], "the newest");
        // The flood's next PUT is over its event's share (2 of 4) and its
        // session's: refused, as long as the others hold theirs.
        assert_eq!(take(&slots, 5, 1, 10, &config).err(), Some(Refused::SessionShare));
        // A second honest PUT of event 2 makes room again (event 1 still
        // holds 3 counted > 2).
        let _second = take(&slots, 11, 2, 20, &config).unwrap();
        assert!(flood[2].cut.notified().now_or_never().is_some());
        drop(honest);
    }

    #[test]
    fn one_session_cannot_keep_the_rest_of_its_event_out() {
        let slots = PutSlots::default();
        let config = config(4);
        let hog: Vec<_> = (0..4).map(|n| take(&slots, n, 1, 10, &config).unwrap()).collect();
        // Another guest of the same event: half of the event's share.
        let _guest = take(&slots, 10, 1, 11, &config).unwrap();
        assert!(hog[3].cut.notified().now_or_never().is_some());
        let _again = take(&slots, 11, 1, 11, &config).unwrap();
        assert!(hog[2].cut.notified().now_or_never().is_some());
        assert_eq!(take(&slots, 12, 1, 11, &config).err(), Some(Refused::SessionShare), "2 of 4 each");
        assert_eq!(take(&slots, 13, 1, 10, &config).err(), Some(Refused::SessionShare));
    }

    #[test]
    fn while_a_slot_is_free_nobody_is_cut_or_refused() {
        let slots = PutSlots::default();
        let config = config(4);
        let big: Vec<_> = (0..3).map(|n| take(&slots, n, 1, 10, &config).unwrap()).collect();
        let _other = take(&slots, 10, 2, 20, &config).unwrap();
        assert!(big.iter().all(|s| s.cut.notified().now_or_never().is_none()), "nobody cut while one was free");
        // Full now: event 1 (3 of 4) is over its share of 2.
        let _second = take(&slots, 11, 2, 20, &config).unwrap();
        assert!(big[2].cut.notified().now_or_never().is_some());
    }

    #[test]
    fn a_reservation_not_admitted_gives_everything_back() {
        let slots = PutSlots::default();
        let config = config(2);
        let reserved = slots.reserve(None, "t".into(), &config).unwrap();
        assert_eq!(slots.reserve(None, "t".into(), &config).err(), Some(Refused::TargetBusy));
        assert_eq!(slots.in_flight(), 1);
        drop(reserved);
        assert_eq!(slots.in_flight(), 0);
        assert!(slots.reserve(None, "t".into(), &config).is_ok());
    }

    #[test]
    fn slots_are_given_back_and_one_target_holds_one() {
        let slots = PutSlots::default();
        let config = config(2);
        let a = take(&slots, 1, 1, 1, &config).unwrap();
        assert_eq!(take(&slots, 1, 2, 2, &config).err(), Some(Refused::TargetBusy));
        let b = take(&slots, 2, 1, 1, &config).unwrap();
        assert_eq!(slots.in_flight(), 2);
        drop((a, b));
        assert_eq!(slots.in_flight(), 0);
        let held = slots.held.lock().unwrap();
        assert!(held.events.is_empty() && held.targets.is_empty() && held.total == 0 && held.all == 0);
    }

    use futures_util::FutureExt;
}
