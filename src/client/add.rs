//! A pick: the files checked, a file picked again checked against the
//! parts the server holds, every new attempt recorded in one strict write
//! before anything is sent, and the first files' hashes started beside that
//! write.

use upload_once_core::attempt::FileInfo;
use upload_once_core::page::Added;
use upload_once_core::restrictions::normalize_content_type;
use uuid::Uuid;
use web_sys::File;

use futures_channel::oneshot;

use super::Client;
use crate::env::{CryptoEntropy, now};
use crate::error::{Error, Result};

impl Client {
    /// Adds files: each is checked, then every new attempt is durably
    /// recorded (one strict transaction) before anything is sent. The
    /// uploads start right away; the call resolves once the files' bytes
    /// are also kept for a reload (within the caps, where the browser lets
    /// them be stored). One add at a time: a second one waits for the first,
    /// so it sees the first one's attempts.
    pub async fn add(&self, files: Vec<File>) -> Result<Vec<Added>> {
        if self.page().is_closed() {
            return Err(Error::Closed);
        }
        // The next add waits for this one: `_done` is dropped when this
        // one ends, however it ends.
        let (_done, mine) = oneshot::channel::<()>();
        let previous = self.0.last_add.borrow_mut().replace(mine);
        if let Some(previous) = previous {
            let _ = previous.await;
        }
        // On a first visit, files picked while the join is under way wait
        // for its answer (the event's restrictions, or a refused guest
        // code); a join that cannot be answered (offline) does not hold
        // them: the server checks the restrictions at authorize anyway.
        if self.page().is_joining() {
            let (answered, answer) = oneshot::channel();
            self.0.join_waiters.borrow_mut().push(answered);
            let _ = answer.await;
        }
        let infos: Vec<FileInfo> = files
            .iter()
            .map(|f| FileInfo {
                name: f.name(),
                size: f.size() as u64,
                content_type: normalize_content_type(&f.type_()),
                last_modified: f.last_modified() as i64,
            })
            .collect();
        // A file that may go on from the stored parts of a large upload must
        // be the same bytes in every one of them: the server is asked which
        // parts it holds, then each of them is hashed in the picked file
        // (one part in memory at a time), before the page decides.
        let candidates = self.page().repick_candidates(&infos);
        if !candidates.is_empty() {
            self.learn_stored_parts(&candidates).await;
        }
        let mut digests = vec![Vec::new(); infos.len()];
        // (The page is not held across the hashing: other tasks use it.)
        let checks = self.page().identity_checks(&infos);
        for check in checks {
            for part in check.parts {
                match crate::env::sha256_hex(&files[check.index], part.start, part.end).await {
                    Ok(hex) if !hex.is_empty() => digests[check.index].push((part.number, hex)),
                    // Unreadable, or no WebCrypto: not known to be the same.
                    _ => break,
                }
            }
        }
        // Files are kept within the room the browser says is left.
        let room = crate::env::storage_room().await;
        self.page().set_storage_room(room);
        // The page decides, and queues the strict write of the new records.
        let (plan, ticket) = self.page().add(&infos, &digests, now(), &mut CryptoEntropy);
        {
            let mut held = self.0.files.borrow_mut();
            for (index, key) in &plan.hold {
                held.insert(*key, files[*index].clone().into());
            }
        }
        // The first files' hashes start now, beside the write (only read
        // here: nothing is sent before the write is done).
        for id in &plan.hash_ahead {
            let record = plan.new_records.iter().find(|r| r.id == *id);
            let index = record.and_then(|r| plan.hold.iter().find(|(_, key)| *key == r.blob_key)).map(|(i, _)| *i);
            if let (Some(record), Some(index)) = (record, index) {
                let size = record.file.size;
                let promise = crate::env::sha256_hex_start(&files[index], 0, size);
                self.0.hashes_ahead.borrow_mut().insert(*id, (promise, size));
            }
        }
        // Durable first: if the write fails (quota, storage gone), nothing
        // was written, nothing is sent, and nothing of the new attempts
        // remains.
        let written = self.ticket_result(ticket).await;
        if written.is_err() {
            self.0.hashes_ahead.borrow_mut().retain(|id, _| !plan.hash_ahead.contains(id));
        }
        written?;
        Ok(plan.outcomes)
    }

    /// Asks the server which parts it holds of these attempts (with the
    /// token of the session that authorized each), for the check of a file
    /// picked again. Without an answer (offline), the parts this browser
    /// knows of are checked, and any other the server lists later lets the
    /// file go again before a byte is sent.
    async fn learn_stored_parts(&self, ids: &[Uuid]) {
        let mut by_token: Vec<(String, Vec<Uuid>)> = Vec::new();
        for id in ids {
            let token = {
                let page = self.page();
                let own = page.record(id).and_then(|r| r.session_token.clone());
                own.or_else(|| page.session().map(|s| s.token.clone()))
            };
            let Some(token) = token else { continue };
            match by_token.iter_mut().find(|(t, _)| *t == token) {
                Some((_, ids)) => ids.push(*id),
                None => by_token.push((token, vec![*id])),
            }
        }
        for (token, ids) in by_token {
            if let Ok(response) = self.0.api.status(&token, &ids).await {
                self.page().learn_stored_parts(&response);
            }
        }
    }
}
