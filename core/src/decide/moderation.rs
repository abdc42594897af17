//! What a host's decision on a media record changes (docs/protocol.md
//! §3.10): its state, reason and time, whether it takes a new place on the
//! wall, and when its rejection's retention began. The server reads the
//! record under its row lock, calls [`decide`], and writes the change.

use crate::time::UnixMillis;
use crate::wire::{Moderation, ModerationDecision};

/// A media record's moderation, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moderated<'a> {
    /// Its state.
    pub state: Moderation,
    /// The host's reason, if any.
    pub reason: Option<&'a str>,
    /// When the host last decided.
    pub moderated_at: Option<UnixMillis>,
    /// When the current run of rejections began (its retention runs from
    /// then).
    pub rejected_at: Option<UnixMillis>,
}

/// What to write: the record's moderation after the decision, and whether
/// it takes the next wall position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change<'a> {
    /// The record's moderation after the decision.
    pub moderated: Moderated<'a>,
    /// Whether it takes the next wall position (it goes onto the wall now).
    /// A rejected record keeps its position, hidden by its state, so
    /// positions only grow and a wall cursor never skips an item.
    pub takes_wall_position: bool,
}

/// The change a host's `decision` with `reason` makes to `recorded` at
/// `now`; `None` when it changes nothing: approving an approved record keeps
/// its wall position, time and reason.
pub fn decide<'a>(
    recorded: &Moderated<'a>,
    decision: ModerationDecision,
    reason: Option<&'a str>,
    now: UnixMillis,
) -> Option<Change<'a>> {
    match decision {
        ModerationDecision::Approve if recorded.state == Moderation::Approved => None,
        ModerationDecision::Approve => Some(Change {
            moderated: Moderated { state: Moderation::Approved, reason, moderated_at: Some(now), rejected_at: None },
            takes_wall_position: true,
        }),
        ModerationDecision::Reject => {
            // The retention runs from the first of consecutive rejections.
            let rejected_at = match (recorded.state, recorded.rejected_at) {
                (Moderation::Rejected, Some(since)) => since,
                _ => now,
            };
            Some(Change {
                moderated: Moderated {
                    state: Moderation::Rejected,
                    reason,
                    moderated_at: Some(now),
                    rejected_at: Some(rejected_at),
                },
                takes_wall_position: false,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PENDING: Moderated<'static> =
        Moderated { state: Moderation::Pending, reason: None, moderated_at: None, rejected_at: None };

    #[test]
    fn approving_puts_it_on_the_wall_once() {
        let change = decide(&PENDING, ModerationDecision::Approve, Some("lovely"), 10).unwrap();
        assert!(change.takes_wall_position);
        assert_eq!(
            change.moderated,
            Moderated {
                state: Moderation::Approved,
                reason: Some("lovely"),
                moderated_at: Some(10),
                rejected_at: None
            }
        );
        assert_eq!(decide(&change.moderated, ModerationDecision::Approve, Some("again"), 20), None, "nothing changes");
    }

    #[test]
    fn rejecting_keeps_the_start_of_a_run_of_rejections() {
        let first = decide(&PENDING, ModerationDecision::Reject, Some("blurry"), 10).unwrap();
        assert!(!first.takes_wall_position, "a rejection never takes a position");
        assert_eq!(first.moderated.rejected_at, Some(10));
        let second = decide(&first.moderated, ModerationDecision::Reject, Some("still blurry"), 20).unwrap();
        assert_eq!((second.moderated.rejected_at, second.moderated.moderated_at), (Some(10), Some(20)));
        assert_eq!(second.moderated.reason, Some("still blurry"));
        let approved = decide(&second.moderated, ModerationDecision::Approve, None, 30).unwrap();
        assert_eq!(approved.moderated.rejected_at, None, "an approval ends the run");
        let again = decide(&approved.moderated, ModerationDecision::Reject, None, 40).unwrap();
        assert_eq!(again.moderated.rejected_at, Some(40), "a new run starts");
    }
}
