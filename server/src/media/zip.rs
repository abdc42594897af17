//! A ZIP archive written as it is read: every entry *stored* (photos and
//! videos are compressed already), each object's bytes streamed from the
//! store into the answer, so neither the archive nor an entry is ever held
//! in memory or on disk. Only the central directory (about 100 bytes per
//! entry) is kept until the end.
//!
//! Written by hand rather than with a crate: what is needed is small
//! (stored entries, CRC-32, data descriptors, ZIP64 — APPNOTE 6.3.10
//! §4.3), the streaming writers on crates.io (`async_zip` 0.0.x, `zip`'s
//! streaming mode) want a seekable or `futures-io` sink and bring their own
//! compression features, and knowing every size in advance lets the answer
//! carry its exact `Content-Length` ([`archive_size`]) — a browser shows
//! real progress for a download of gigabytes.
//!
//! Each entry has bit 3 set: its CRC-32 is only known once its bytes went
//! out, so it follows them in a data descriptor (as every streaming writer
//! does). ZIP64 is used where a size or an offset needs it: an entry of
//! 4 GiB or more gets the ZIP64 extra field in both headers and 8-byte
//! sizes in its descriptor; an entry past 4 GiB into the archive gets its
//! offset in the central directory's ZIP64 extra field; an archive that
//! needs either (or more than 65,534 entries) ends with the ZIP64 end of
//! central directory record and its locator. Names are UTF-8 (bit 11).

use std::io;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::BoxFuture;
use futures_util::{Stream, StreamExt};
use upload_once_core::time::UnixMillis;

use crate::storage::ObjectBody;

const LOCAL_HEADER: u32 = 0x0403_4b50;
const DATA_DESCRIPTOR: u32 = 0x0807_4b50;
const CENTRAL_HEADER: u32 = 0x0201_4b50;
const ZIP64_END: u32 = 0x0606_4b50;
const ZIP64_LOCATOR: u32 = 0x0706_4b50;
const END: u32 = 0x0605_4b50;
/// Bit 3 (sizes and CRC in a data descriptor) and bit 11 (UTF-8 names).
const FLAGS: u16 = (1 << 3) | (1 << 11);
const VERSION_PLAIN: u16 = 20;
const VERSION_ZIP64: u16 = 45;
/// "Made by" Unix (3), spec version 4.5.
const MADE_BY: u16 = (3 << 8) | 45;
const MAX32: u64 = 0xffff_ffff;
const MAX16: u64 = 0xffff;

/// One file of the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the archive (see [`unique_names`]).
    pub name: String,
    /// Its exact size in bytes.
    pub size: u64,
    /// Its modification time.
    pub modified: UnixMillis,
}

impl Entry {
    /// Whether this entry's own sizes need ZIP64.
    fn big(&self, force: bool) -> bool {
        force || self.size >= MAX32
    }

    fn local_header_len(&self, force: bool) -> u64 {
        30 + self.name.len() as u64 + if self.big(force) { 20 } else { 0 }
    }

    fn descriptor_len(&self, force: bool) -> u64 {
        if self.big(force) { 24 } else { 16 }
    }
}

/// Archive-wide choices (tests force ZIP64 on small archives).
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// ZIP64 records for every entry and at the end, whatever the sizes.
    pub force_zip64: bool,
}

/// Makes names fit for an archive and unique in it: no path (`/` and `\`
/// become `_`), none of the characters Windows refuses, no trailing dots or
/// spaces, never empty; a name already taken (without regard to case, as
/// the file systems of Windows and macOS compare them) gets ` (2)`, ` (3)`…
/// before its extension.
pub fn unique_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    let mut next_number: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for name in names {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_control() || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*') {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        let clean = clean.trim().trim_end_matches(['.', ' ']).trim_start_matches('.').to_owned();
        let clean = if clean.is_empty() { "file".to_owned() } else { clean };
        let (stem, ext) = match clean.rfind('.') {
            Some(dot) if dot > 0 => (clean[..dot].to_owned(), clean[dot..].to_owned()),
            _ => (clean.clone(), String::new()),
        };
        let key = clean.to_lowercase();
        let mut candidate = clean;
        if !taken.insert(key.clone()) {
            // The next number to try for this name is kept, so the k-th
            // photo called `image.jpg` (a phone's share sheet names them all
            // so) costs one try, not k: linear in the names, not quadratic.
            let n = next_number.entry(key).or_insert(2);
            loop {
                candidate = format!("{stem} ({n}){ext}");
                *n += 1;
                if taken.insert(candidate.to_lowercase()) {
                    break;
                }
            }
        }
        out.push(candidate);
    }
    out
}

/// Where each local header starts, the central directory's offset, and
/// its length.
fn layout(entries: &[Entry], options: Options) -> (Vec<u64>, u64, u64) {
    let force = options.force_zip64;
    let mut offsets = Vec::with_capacity(entries.len());
    let mut offset = 0u64;
    for e in entries {
        offsets.push(offset);
        offset += e.local_header_len(force) + e.size + e.descriptor_len(force);
    }
    let central: u64 = entries.iter().zip(&offsets).map(|(e, &o)| central_header_len(e, o, force)).sum();
    (offsets, offset, central)
}

fn central_extra_len(e: &Entry, offset: u64, force: bool) -> u64 {
    let sizes = if e.big(force) { 16 } else { 0 };
    let off = if force || offset >= MAX32 { 8 } else { 0 };
    if sizes + off == 0 { 0 } else { 4 + sizes + off }
}

fn central_header_len(e: &Entry, offset: u64, force: bool) -> u64 {
    46 + e.name.len() as u64 + central_extra_len(e, offset, force)
}

fn needs_zip64_end(entries: usize, central_offset: u64, central_len: u64, force: bool) -> bool {
    force || entries as u64 >= MAX16 || central_offset >= MAX32 || central_len >= MAX32
}

/// The archive's exact length, known before a byte of it is written.
pub fn archive_size(entries: &[Entry], options: Options) -> u64 {
    let (_, central_offset, central_len) = layout(entries, options);
    let end =
        22 + if needs_zip64_end(entries.len(), central_offset, central_len, options.force_zip64) { 56 + 20 } else { 0 };
    central_offset + central_len + end
}

/// MS-DOS date and time (UTC, two-second steps, from 1980).
fn dos_time(ms: UnixMillis) -> (u16, u16) {
    let Ok(ts) = jiff::Timestamp::from_millisecond(ms) else { return (0, (1 << 5) | 1) };
    let dt = ts.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    if dt.year() < 1980 {
        return (0, (1 << 5) | 1);
    }
    let time = ((dt.hour() as u16) << 11) | ((dt.minute() as u16) << 5) | (dt.second() as u16 / 2);
    let date = (((dt.year() - 1980).min(127) as u16) << 9) | ((dt.month() as u16) << 5) | dt.day() as u16;
    (time, date)
}

fn local_header(e: &Entry, force: bool) -> Bytes {
    let big = e.big(force);
    let (time, date) = dos_time(e.modified);
    let mut b = BytesMut::with_capacity(e.local_header_len(force) as usize);
    b.put_u32_le(LOCAL_HEADER);
    b.put_u16_le(if big { VERSION_ZIP64 } else { VERSION_PLAIN });
    b.put_u16_le(FLAGS);
    b.put_u16_le(0); // stored
    b.put_u16_le(time);
    b.put_u16_le(date);
    b.put_u32_le(0); // CRC-32: in the descriptor
    // Sizes: in the descriptor (the ZIP64 extra field says they are 8 bytes there).
    b.put_u32_le(if big { MAX32 as u32 } else { 0 });
    b.put_u32_le(if big { MAX32 as u32 } else { 0 });
    b.put_u16_le(e.name.len() as u16);
    b.put_u16_le(if big { 20 } else { 0 });
    b.put_slice(e.name.as_bytes());
    if big {
        b.put_u16_le(0x0001);
        b.put_u16_le(16);
        b.put_u64_le(0);
        b.put_u64_le(0);
    }
    b.freeze()
}

fn descriptor(e: &Entry, crc: u32, force: bool) -> Bytes {
    let mut b = BytesMut::with_capacity(24);
    b.put_u32_le(DATA_DESCRIPTOR);
    b.put_u32_le(crc);
    if e.big(force) {
        b.put_u64_le(e.size);
        b.put_u64_le(e.size);
    } else {
        b.put_u32_le(e.size as u32);
        b.put_u32_le(e.size as u32);
    }
    b.freeze()
}

fn central_header(b: &mut BytesMut, e: &Entry, crc: u32, offset: u64, force: bool) {
    let big = e.big(force);
    let far = force || offset >= MAX32;
    let (time, date) = dos_time(e.modified);
    b.put_u32_le(CENTRAL_HEADER);
    b.put_u16_le(MADE_BY);
    b.put_u16_le(if big || far { VERSION_ZIP64 } else { VERSION_PLAIN });
    b.put_u16_le(FLAGS);
    b.put_u16_le(0);
    b.put_u16_le(time);
    b.put_u16_le(date);
    b.put_u32_le(crc);
    let size32 = if big { MAX32 as u32 } else { e.size as u32 };
    b.put_u32_le(size32);
    b.put_u32_le(size32);
    b.put_u16_le(e.name.len() as u16);
    b.put_u16_le(central_extra_len(e, offset, force) as u16);
    b.put_u16_le(0); // comment
    b.put_u16_le(0); // disk
    b.put_u16_le(0); // internal attributes
    b.put_u32_le(0o100644 << 16); // a regular file, rw-r--r--
    b.put_u32_le(if far { MAX32 as u32 } else { offset as u32 });
    b.put_slice(e.name.as_bytes());
    let extra = central_extra_len(e, offset, force);
    if extra > 0 {
        b.put_u16_le(0x0001);
        b.put_u16_le((extra - 4) as u16);
        if big {
            b.put_u64_le(e.size);
            b.put_u64_le(e.size);
        }
        if far {
            b.put_u64_le(offset);
        }
    }
}

fn end_records(b: &mut BytesMut, entries: u64, central_offset: u64, central_len: u64, force: bool) {
    if needs_zip64_end(entries as usize, central_offset, central_len, force) {
        let zip64_end_offset = central_offset + central_len;
        b.put_u32_le(ZIP64_END);
        b.put_u64_le(44);
        b.put_u16_le(MADE_BY);
        b.put_u16_le(VERSION_ZIP64);
        b.put_u32_le(0);
        b.put_u32_le(0);
        b.put_u64_le(entries);
        b.put_u64_le(entries);
        b.put_u64_le(central_len);
        b.put_u64_le(central_offset);
        b.put_u32_le(ZIP64_LOCATOR);
        b.put_u32_le(0);
        b.put_u64_le(zip64_end_offset);
        b.put_u32_le(1);
    }
    let count = if force || entries >= MAX16 { MAX16 as u16 } else { entries as u16 };
    b.put_u32_le(END);
    b.put_u16_le(0);
    b.put_u16_le(0);
    b.put_u16_le(count);
    b.put_u16_le(count);
    b.put_u32_le(if force || central_len >= MAX32 { MAX32 as u32 } else { central_len as u32 });
    b.put_u32_le(if force || central_offset >= MAX32 { MAX32 as u32 } else { central_offset as u32 });
    b.put_u16_le(0);
}

/// Opens the bytes of entry `n`.
pub type Open = Box<dyn FnMut(usize) -> BoxFuture<'static, io::Result<ObjectBody>> + Send>;

enum Step {
    /// The local header of entry `n` is next.
    Header(usize),
    /// Entry `n`'s bytes are streaming.
    Body {
        n: usize,
        body: ObjectBody,
        crc: crc32fast::Hasher,
        sent: u64,
    },
    /// The central directory and the end records are next.
    End,
    Done,
}

struct Writer {
    entries: Vec<Entry>,
    offsets: Vec<u64>,
    crcs: Vec<u32>,
    open: Open,
    force: bool,
    step: Step,
}

/// The archive of `entries`, each entry's bytes from `open(n)`: exactly
/// [`archive_size`] bytes, unless an object cannot be read or is not of its
/// recorded size, which ends the stream with an error (the download fails
/// rather than hand over a wrong file).
pub fn archive(entries: Vec<Entry>, open: Open, options: Options) -> impl Stream<Item = io::Result<Bytes>> + Send {
    let (offsets, _, _) = layout(&entries, options);
    let writer = Writer {
        crcs: Vec::with_capacity(entries.len()),
        entries,
        offsets,
        open,
        force: options.force_zip64,
        step: Step::Header(0),
    };
    futures_util::stream::unfold(writer, |mut w| async move {
        loop {
            match std::mem::replace(&mut w.step, Step::Done) {
                Step::Header(n) if n == w.entries.len() => w.step = Step::End,
                Step::Header(n) => {
                    let body = match (w.open)(n).await {
                        Ok(body) => body,
                        Err(e) => return Some((Err(e), w)),
                    };
                    let header = local_header(&w.entries[n], w.force);
                    w.step = Step::Body { n, body, crc: crc32fast::Hasher::new(), sent: 0 };
                    return Some((Ok(header), w));
                }
                Step::Body { n, mut body, mut crc, sent } => match body.next().await {
                    Some(Ok(chunk)) => {
                        let sent = sent + chunk.len() as u64;
                        if sent > w.entries[n].size {
                            let e = io::Error::other(format!("{} is longer than recorded", w.entries[n].name));
                            return Some((Err(e), w));
                        }
                        crc.update(&chunk);
                        w.step = Step::Body { n, body, crc, sent };
                        return Some((Ok(chunk), w));
                    }
                    Some(Err(e)) => return Some((Err(e), w)),
                    None if sent != w.entries[n].size => {
                        let e = io::Error::other(format!("{} is shorter than recorded", w.entries[n].name));
                        return Some((Err(e), w));
                    }
                    None => {
                        let crc = crc.finalize();
                        w.crcs.push(crc);
                        w.step = Step::Header(n + 1);
                        return Some((Ok(descriptor(&w.entries[n], crc, w.force)), w));
                    }
                },
                Step::End => {
                    let (_, central_offset, central_len) = layout(&w.entries, Options { force_zip64: w.force });
                    let mut b = BytesMut::with_capacity(central_len as usize + 98);
                    for ((e, &offset), &crc) in w.entries.iter().zip(&w.offsets).zip(&w.crcs) {
                        central_header(&mut b, e, crc, offset, w.force);
                    }
                    end_records(&mut b, w.entries.len() as u64, central_offset, central_len, w.force);
                    return Some((Ok(b.freeze()), w));
                }
                Step::Done => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_unique_without_regard_to_case() {
        let names = unique_names(["IMG_1.jpg", "img_1.JPG", "IMG_1.jpg", "a/b.png", "..", "x.", "README", "readme"]);
        assert_eq!(
            names,
            ["IMG_1.jpg", "img_1 (2).JPG", "IMG_1 (3).jpg", "a_b.png", "file", "x", "README", "readme (2)"]
        );
    }

    #[test]
    fn a_name_made_unique_does_not_take_a_later_one() {
        let names = unique_names(["a.jpg", "a.jpg", "a (2).jpg"]);
        assert_eq!(names, ["a.jpg", "a (2).jpg", "a (2) (2).jpg"]);
    }

    async fn written(entries: Vec<Entry>, contents: Vec<Vec<u8>>, options: Options) -> Vec<u8> {
        let open: Open = Box::new(move |n| {
            let bytes = Bytes::from(contents[n].clone());
            Box::pin(async move {
                let body: ObjectBody = Box::pin(futures_util::stream::iter([Ok(bytes)]));
                Ok(body)
            })
        });
        let chunks: Vec<_> = archive(entries, open, options).collect().await;
        chunks.into_iter().map(|c| c.unwrap()).flat_map(|c| c.to_vec()).collect()
    }

    #[tokio::test]
    async fn the_length_is_known_in_advance_with_and_without_zip64() {
        for force_zip64 in [false, true] {
            let options = Options { force_zip64 };
            let entries = vec![
                Entry { name: "a.jpg".into(), size: 3, modified: 1_700_000_000_000 },
                Entry { name: "b.jpg".into(), size: 0, modified: 0 },
            ];
            let bytes = written(entries.clone(), vec![b"abc".to_vec(), Vec::new()], options).await;
            assert_eq!(bytes.len() as u64, archive_size(&entries, options), "zip64: {force_zip64}");
        }
    }

    /// ZIP64 records (forced on a small archive, which the format allows)
    /// are read back by Info-ZIP's `unzip`, CRCs and all.
    #[tokio::test]
    async fn unzip_reads_the_zip64_records() {
        let entries = vec![
            Entry { name: "eins.jpg".into(), size: 5, modified: 1_700_000_000_000 },
            Entry { name: "zwei – ü.mp4".into(), size: 4, modified: 1_700_000_000_000 },
        ];
        let bytes = written(entries, vec![b"hello".to_vec(), b"welt".to_vec()], Options { force_zip64: true }).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zip64.zip");
        std::fs::write(&path, bytes).unwrap();
        let out = std::process::Command::new("unzip").arg("-t").arg(&path).output().expect("unzip");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && said.contains("No errors detected"), "{said}");
        let out = std::process::Command::new("unzip").arg("-p").arg(&path).arg("eins.jpg").output().unwrap();
        assert_eq!(out.stdout, b"hello");
    }

    #[tokio::test]
    async fn an_entry_of_another_size_than_recorded_fails_the_stream() {
        let entries = vec![Entry { name: "a".into(), size: 4, modified: 0 }];
        let open: Open = Box::new(|_| {
            Box::pin(async {
                let body: ObjectBody = Box::pin(futures_util::stream::iter([Ok(Bytes::from_static(b"abc"))]));
                Ok(body)
            })
        });
        let results: Vec<_> = archive(entries, open, Options::default()).collect().await;
        assert!(results.last().unwrap().is_err());
    }
}
