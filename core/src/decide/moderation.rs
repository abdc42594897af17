//! What a host's decision on a media record changes (docs/protocol.md
//! §3.10): its state, reason and time, whether it takes a new place on the
//! wall, and when its rejection's retention began. The server reads the
//! record under its row lock, calls [`decide`], and writes the change.
//!
//! A record goes onto the wall once it is approved *and* its renditions are
//! settled (made, or the placeholder decided): the wall and other guests
//! only ever get renditions, so an approval that comes first waits for
//! them, and the end of its rendition job places it
//! ([`placed_once_settled`]).

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

/// Where a record stands towards the wall, besides its moderation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wall {
    /// It has a wall position (it was on the wall once, with its
    /// renditions settled then).
    pub placed: bool,
    /// Its rendition job has ended: the renditions are stored, or the
    /// placeholder stands for them.
    pub rendition_settled: bool,
}

impl Wall {
    /// Whether an approval may place it now.
    fn ready(self) -> bool {
        self.placed || self.rendition_settled
    }
}

/// What to write: the record's moderation after the decision, and whether
/// it takes the next wall position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change<'a> {
    /// The record's moderation after the decision.
    pub moderated: Moderated<'a>,
    /// Whether it takes the next wall position (it goes onto the wall now).
    /// A rejected record keeps its position, hidden by its state, so
    /// positions only grow and a wall cursor never skips an item. An
    /// approval whose renditions are not settled takes none: the end of the
    /// rendition job places it.
    pub takes_wall_position: bool,
}

/// The change a host's `decision` with `reason` makes to `recorded` (which
/// stands towards the wall as `wall` says) at `now`; `None` when it changes
/// nothing: approving an approved record keeps its wall position, time and
/// reason.
pub fn decide<'a>(
    recorded: &Moderated<'a>,
    wall: Wall,
    decision: ModerationDecision,
    reason: Option<&'a str>,
    now: UnixMillis,
) -> Option<Change<'a>> {
    match decision {
        ModerationDecision::Approve if recorded.state == Moderation::Approved => None,
        ModerationDecision::Approve => Some(Change {
            moderated: Moderated { state: Moderation::Approved, reason, moderated_at: Some(now), rejected_at: None },
            takes_wall_position: wall.ready(),
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

/// Whether a record whose rendition job just ended takes the next wall
/// position: it was approved while its renditions were being made, and has
/// none yet. (Under the wall's lock, so an approval and the job's end never
/// both miss it, nor both place it.)
pub fn placed_once_settled(state: Moderation, wall: Wall) -> bool {
    state == Moderation::Approved && !wall.placed && wall.rendition_settled
}

#[cfg(test)]
mod tests {
    use super::*;

    const PENDING: Moderated<'static> =
        Moderated { state: Moderation::Pending, reason: None, moderated_at: None, rejected_at: None };
    const SETTLED: Wall = Wall { placed: false, rendition_settled: true };
    const RENDERING: Wall = Wall { placed: false, rendition_settled: false };

    #[test]
    fn approving_puts_it_on_the_wall_once() {
        let change = decide(&PENDING, SETTLED, ModerationDecision::Approve, Some("lovely"), 10).unwrap();
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
        assert_eq!(
            decide(&change.moderated, SETTLED, ModerationDecision::Approve, Some("again"), 20),
            None,
            "nothing changes"
        );
    }

    #[test]
    fn rejecting_keeps_the_start_of_a_run_of_rejections() {
        let first = decide(&PENDING, SETTLED, ModerationDecision::Reject, Some("blurry"), 10).unwrap();
        assert!(!first.takes_wall_position, "a rejection never takes a position");
        assert_eq!(first.moderated.rejected_at, Some(10));
        let second = decide(&first.moderated, SETTLED, ModerationDecision::Reject, Some("still blurry"), 20).unwrap();
        assert_eq!((second.moderated.rejected_at, second.moderated.moderated_at), (Some(10), Some(20)));
        assert_eq!(second.moderated.reason, Some("still blurry"));
        let approved = decide(&second.moderated, SETTLED, ModerationDecision::Approve, None, 30).unwrap();
        assert_eq!(approved.moderated.rejected_at, None, "an approval ends the run");
        let again = decide(&approved.moderated, SETTLED, ModerationDecision::Reject, None, 40).unwrap();
        assert_eq!(again.moderated.rejected_at, Some(40), "a new run starts");
    }

    #[test]
    fn an_approval_waits_for_the_renditions() {
        let change = decide(&PENDING, RENDERING, ModerationDecision::Approve, None, 10).unwrap();
        assert_eq!(change.moderated.state, Moderation::Approved, "approved at once");
        assert!(!change.takes_wall_position, "but not on the wall before its renditions");
        assert!(placed_once_settled(Moderation::Approved, SETTLED), "the job's end places it");
        assert!(!placed_once_settled(Moderation::Approved, RENDERING), "not before it ends");
        assert!(!placed_once_settled(Moderation::Pending, SETTLED), "nor a record not approved");
        assert!(!placed_once_settled(Moderation::Rejected, SETTLED), "nor a rejected one");
        let placed = Wall { placed: true, rendition_settled: true };
        assert!(!placed_once_settled(Moderation::Approved, placed), "nor twice");
        // A record that was on the wall, rejected, and approved again while
        // its job runs again (a placeholder put back in the queue) had its
        // renditions settled once: it goes back now.
        let requeued = Wall { placed: true, rendition_settled: false };
        let rejected = decide(&change.moderated, requeued, ModerationDecision::Reject, None, 20).unwrap();
        assert!(
            decide(&rejected.moderated, requeued, ModerationDecision::Approve, None, 30).unwrap().takes_wall_position
        );
    }
}
