//! Values crossing between Rust and JS, written out by hand.
//!
//! JSON text is parsed and written by the browser (`JSON.parse`,
//! `Response.json()`, `JSON.stringify`); only plain JS objects cross into
//! wasm, read and built field by field here. No serde machinery and no float
//! formatting end up in the package, which keeps it small.

use std::collections::BTreeMap;

use js_sys::{Array, Object, Reflect};
use upload_once_core::attempt::{
    AttemptError, AttemptRecord, Confirmation, FileInfo, ModerationView, RECORD_VERSION, Step, Transfer,
};
use upload_once_core::wire::{
    AttemptResponse, AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest, EventInfo, Media, MediaSummary,
    Moderation, ModerationPolicy, Problem, Rejection, SessionResponse, StatusResponse, UploadInstruction,
};
use uuid::Uuid;
use wasm_bindgen::JsValue;

/// A field that is missing or of the wrong type.
pub type Bad = &'static str;

/// Reads fields of a JS object.
pub struct Read<'a>(pub &'a JsValue);

impl Read<'_> {
    fn get(&self, key: &str) -> JsValue {
        Reflect::get(self.0, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    }

    /// A present, non-null field.
    pub fn opt(&self, key: &str) -> Option<JsValue> {
        Some(self.get(key)).filter(|v| !v.is_undefined() && !v.is_null())
    }

    /// A required string.
    pub fn str(&self, key: &'static str) -> Result<String, Bad> {
        self.get(key).as_string().ok_or(key)
    }

    /// An optional string.
    pub fn opt_str(&self, key: &'static str) -> Result<Option<String>, Bad> {
        self.opt(key).map(|v| v.as_string().ok_or(key)).transpose()
    }

    /// A required number.
    pub fn num(&self, key: &'static str) -> Result<f64, Bad> {
        self.get(key).as_f64().filter(|n| n.is_finite()).ok_or(key)
    }

    /// A required non-negative integer.
    pub fn u64(&self, key: &'static str) -> Result<u64, Bad> {
        let n = self.num(key)?;
        if n >= 0.0 && n.fract() == 0.0 { Ok(n as u64) } else { Err(key) }
    }

    /// An optional integer.
    pub fn opt_i64(&self, key: &'static str) -> Result<Option<i64>, Bad> {
        self.opt(key).map(|v| v.as_f64().filter(|n| n.fract() == 0.0).map(|n| n as i64).ok_or(key)).transpose()
    }

    /// A required UUID (as a string).
    pub fn uuid(&self, key: &'static str) -> Result<Uuid, Bad> {
        Uuid::try_parse(&self.str(key)?).map_err(|_| key)
    }

    /// An optional UUID.
    pub fn opt_uuid(&self, key: &'static str) -> Result<Option<Uuid>, Bad> {
        self.opt_str(key)?.map(|s| Uuid::try_parse(&s).map_err(|_| key)).transpose()
    }

    /// A required boolean.
    pub fn bool(&self, key: &'static str) -> Result<bool, Bad> {
        self.get(key).as_bool().ok_or(key)
    }

    /// A required array of strings.
    pub fn strings(&self, key: &'static str) -> Result<Vec<String>, Bad> {
        let value = self.get(key);
        if !Array::is_array(&value) {
            return Err(key);
        }
        Array::from(&value).iter().map(|v| v.as_string().ok_or(key)).collect()
    }

    /// A string field parsed with `parse`.
    pub fn parsed<T>(&self, key: &'static str, parse: fn(&str) -> Option<T>) -> Result<T, Bad> {
        parse(&self.str(key)?).ok_or(key)
    }
}

/// Builds a JS object.
pub struct Build(Object);

impl Default for Build {
    fn default() -> Self {
        Build(Object::new())
    }
}

impl Build {
    /// Sets any value.
    pub fn val(self, key: &str, value: &JsValue) -> Self {
        let _ = Reflect::set(&self.0, &JsValue::from_str(key), value);
        self
    }

    /// Sets a string.
    pub fn str(self, key: &str, value: &str) -> Self {
        self.val(key, &JsValue::from_str(value))
    }

    /// Sets a string, or `null`.
    pub fn opt_str(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.str(key, v),
            None => self.val(key, &JsValue::NULL),
        }
    }

    /// Sets a number.
    pub fn num(self, key: &str, value: f64) -> Self {
        self.val(key, &JsValue::from_f64(value))
    }

    /// Sets a number, or `null`.
    pub fn opt_num(self, key: &str, value: Option<f64>) -> Self {
        match value {
            Some(v) => self.num(key, v),
            None => self.val(key, &JsValue::NULL),
        }
    }

    /// Sets a boolean.
    pub fn bool(self, key: &str, value: bool) -> Self {
        self.val(key, &JsValue::from_bool(value))
    }

    /// The object.
    pub fn done(self) -> JsValue {
        self.0.into()
    }
}

fn strings(list: &[String]) -> JsValue {
    list.iter().map(|s| JsValue::from_str(s)).collect::<Array>().into()
}

fn opt_uuid(u: Option<Uuid>) -> Option<String> {
    u.map(|u| u.to_string())
}

// ----- wire types: requests out -----------------------------------------

/// `AuthorizeRequest` as a JS object.
pub fn authorize_request(r: &AuthorizeRequest) -> JsValue {
    let b = Build::default()
        .str("id", &r.id.to_string())
        .str("filename", &r.filename)
        .num("size", r.size as f64)
        .str("content_type", &r.content_type);
    match &r.sha256 {
        Some(sha) => b.str("sha256", sha).done(),
        None => b.done(),
    }
}

/// `ConfirmRequest` as a JS object.
pub fn confirm_request(r: &ConfirmRequest) -> JsValue {
    let b = Build::default().num("size", r.size as f64).str("content_type", &r.content_type);
    match &r.sha256 {
        Some(sha) => b.str("sha256", sha).done(),
        None => b.done(),
    }
}

/// `StatusRequest` as a JS object.
pub fn status_request(ids: &[Uuid]) -> JsValue {
    let list: Array = ids.iter().map(|id| JsValue::from_str(&id.to_string())).collect();
    Build::default().val("ids", &list).done()
}

/// `CreateSessionRequest` as a JS object.
pub fn session_request(guest_code: &str) -> JsValue {
    Build::default().str("guest_code", guest_code).done()
}

// ----- wire types: answers in --------------------------------------------

/// Decodes a value received from JS.
pub trait FromJs: Sized {
    /// Reads it, naming the first bad field.
    fn from_js(v: &JsValue) -> Result<Self, Bad>;
}

impl FromJs for EventInfo {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        Ok(EventInfo {
            slug: r.str("slug")?,
            title: r.str("title")?,
            max_file_bytes: r.u64("max_file_bytes")?,
            allowed_types: r.strings("allowed_types")?,
            moderation: r.parsed("moderation", ModerationPolicy::parse)?,
        })
    }
}

impl FromJs for SessionResponse {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        Ok(SessionResponse {
            session_token: r.str("session_token")?,
            expires_at: r.str("expires_at")?,
            event: EventInfo::from_js(&r.opt("event").ok_or("event")?)?,
        })
    }
}

impl FromJs for UploadInstruction {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        let headers_value = r.opt("headers").ok_or("headers")?;
        let mut headers = BTreeMap::new();
        for key in Object::keys(headers_value.dyn_ref::<Object>().ok_or("headers")?).iter() {
            let name = key.as_string().ok_or("headers")?;
            let value = Reflect::get(&headers_value, &key).ok().and_then(|v| v.as_string()).ok_or("headers")?;
            headers.insert(name, value);
        }
        Ok(UploadInstruction { method: r.str("method")?, url: r.str("url")?, headers, expires_at: r.str("expires_at")? })
    }
}

impl FromJs for MediaSummary {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        Ok(MediaSummary {
            id: r.uuid("id")?,
            moderation: r.parsed("moderation", Moderation::parse)?,
            reason: r.opt_str("reason")?,
            url: r.str("url")?,
        })
    }
}

impl FromJs for AttemptResponse {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        Ok(AttemptResponse {
            id: r.uuid("id")?,
            state: r.parsed("state", AttemptState::parse)?,
            object_key: r.str("object_key")?,
            upload: r.opt("upload").map(|u| UploadInstruction::from_js(&u)).transpose()?,
            expires_at: r.str("expires_at")?,
            media: r.opt("media").map(|m| MediaSummary::from_js(&m)).transpose()?,
            rejection: r
                .opt("rejection")
                .map(|x| {
                    let x = Read(&x);
                    Ok::<_, Bad>(Rejection { code: x.str("code")?, reason: x.str("reason")? })
                })
                .transpose()?,
        })
    }
}

impl FromJs for Media {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        Ok(Media {
            id: r.uuid("id")?,
            attempt_id: r.uuid("attempt_id")?,
            event: r.str("event")?,
            object_key: r.str("object_key")?,
            filename: r.str("filename")?,
            size: r.u64("size")?,
            content_type: r.str("content_type")?,
            sha256: r.opt_str("sha256")?,
            moderation: r.parsed("moderation", Moderation::parse)?,
            moderation_reason: r.opt_str("moderation_reason")?,
            url: r.str("url")?,
            created_at: r.str("created_at")?,
        })
    }
}

impl FromJs for AttemptStatus {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        let id = r.uuid("id")?;
        Ok(match r.str("state")?.as_str() {
            "authorized" => AttemptStatus::Authorized {
                id,
                object_stored: r.bool("object_stored")?,
                expires_at: r.str("expires_at")?,
            },
            "confirmed" => AttemptStatus::Confirmed { id, media: MediaSummary::from_js(&r.opt("media").ok_or("media")?)? },
            "expired" => AttemptStatus::Expired { id },
            "rejected" => AttemptStatus::Rejected { id, code: r.str("code")?, reason: r.str("reason")? },
            "not_found" => AttemptStatus::NotFound { id },
            _ => return Err("state"),
        })
    }
}

impl FromJs for StatusResponse {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let list = Read(v).opt("results").ok_or("results")?;
        if !Array::is_array(&list) {
            return Err("results");
        }
        let results = Array::from(&list).iter().map(|item| AttemptStatus::from_js(&item)).collect::<Result<_, _>>()?;
        Ok(StatusResponse { results })
    }
}

impl FromJs for Problem {
    fn from_js(v: &JsValue) -> Result<Self, Bad> {
        let r = Read(v);
        Ok(Problem {
            type_uri: r.opt_str("type")?.unwrap_or_default(),
            title: r.opt_str("title")?.unwrap_or_default(),
            status: r.u64("status").unwrap_or(0) as u16,
            detail: r.opt_str("detail")?.unwrap_or_default(),
            code: r.str("code")?,
            retryable: r.opt("retryable").and_then(|v| v.as_bool()).unwrap_or(false),
        })
    }
}

// ----- the stored record -------------------------------------------------

/// An attempt record as stored in IndexedDB (field names are the stored
/// format, version [`RECORD_VERSION`]).
pub fn record_to_js(a: &AttemptRecord) -> JsValue {
    let file = Build::default()
        .str("name", &a.file.name)
        .num("size", a.file.size as f64)
        .str("content_type", &a.file.content_type)
        .num("last_modified", a.file.last_modified as f64)
        .done();
    let upload = a.upload.as_ref().map(|u| {
        let headers = u.headers.iter().fold(Build::default(), |b, (k, v)| b.str(k, v)).done();
        Build::default().str("method", &u.method).str("url", &u.url).val("headers", &headers).str("expires_at", &u.expires_at).done()
    });
    let media = a.media.as_ref().map(media_summary_to_js);
    let error = a.error.as_ref().map(|e| Build::default().str("code", &e.code).str("message", &e.message).done());
    Build::default()
        .num("v", f64::from(a.v))
        .str("id", &a.id.to_string())
        .str("event", &a.event)
        .val("file", &file)
        .str("blob_key", &a.blob_key.to_string())
        .opt_str("sha256", a.sha256.as_deref())
        .opt_str("object_key", a.object_key.as_deref())
        .val("upload", &upload.unwrap_or(JsValue::NULL))
        .opt_str("expires_at", a.expires_at.as_deref())
        .str("transfer", a.transfer.as_str())
        .str("confirmation", a.confirmation.as_str())
        .str("moderation", a.moderation.as_str())
        .val("media", &media.unwrap_or(JsValue::NULL))
        .val("error", &error.unwrap_or(JsValue::NULL))
        .num("retries", f64::from(a.retries))
        .opt_num("next_retry_at", a.next_retry_at.map(|t| t as f64))
        .str("step", a.step.as_str())
        .num("created_at", a.created_at as f64)
        .num("updated_at", a.updated_at as f64)
        .num("revision", a.revision as f64)
        .opt_str("replaces", opt_uuid(a.replaces).as_deref())
        .opt_str("replaced_by", opt_uuid(a.replaced_by).as_deref())
        .done()
}

fn media_summary_to_js(m: &MediaSummary) -> JsValue {
    let b = Build::default().str("id", &m.id.to_string()).str("moderation", m.moderation.as_str()).str("url", &m.url);
    match &m.reason {
        Some(reason) => b.str("reason", reason).done(),
        None => b.done(),
    }
}

/// Reads a stored attempt record. Records written by a newer version are
/// left alone (`None`).
pub fn record_from_js(v: &JsValue) -> Option<AttemptRecord> {
    let r = Read(v);
    let version = r.u64("v").ok()? as u32;
    if version > RECORD_VERSION {
        return None;
    }
    // Version 1 is the current format; later versions add upgrade steps here.
    read_record(&r).ok()
}

fn read_record(r: &Read<'_>) -> Result<AttemptRecord, Bad> {
    let file = r.opt("file").ok_or("file")?;
    let f = Read(&file);
    Ok(AttemptRecord {
        v: RECORD_VERSION,
        id: r.uuid("id")?,
        event: r.str("event")?,
        file: FileInfo {
            name: f.str("name")?,
            size: f.u64("size")?,
            content_type: f.str("content_type")?,
            last_modified: f.num("last_modified")? as i64,
        },
        blob_key: r.uuid("blob_key")?,
        sha256: r.opt_str("sha256")?,
        object_key: r.opt_str("object_key")?,
        upload: r.opt("upload").map(|u| UploadInstruction::from_js(&u)).transpose()?,
        expires_at: r.opt_str("expires_at")?,
        transfer: r.parsed("transfer", Transfer::parse)?,
        confirmation: r.parsed("confirmation", Confirmation::parse)?,
        moderation: r.parsed("moderation", ModerationView::parse)?,
        media: r.opt("media").map(|m| MediaSummary::from_js(&m)).transpose()?,
        error: r
            .opt("error")
            .map(|e| {
                let e = Read(&e);
                Ok::<_, Bad>(AttemptError { code: e.str("code")?, message: e.str("message")? })
            })
            .transpose()?,
        retries: r.u64("retries")? as u32,
        next_retry_at: r.opt_i64("next_retry_at")?,
        step: r.parsed("step", Step::parse)?,
        created_at: r.num("created_at")? as i64,
        updated_at: r.num("updated_at")? as i64,
        revision: r.u64("revision")?,
        replaces: r.opt_uuid("replaces")?,
        replaced_by: r.opt_uuid("replaced_by")?,
    })
}

/// An event's public description as a JS object (`EventInfo`).
pub fn event_to_js(e: &EventInfo) -> JsValue {
    Build::default()
        .str("slug", &e.slug)
        .str("title", &e.title)
        .num("max_file_bytes", e.max_file_bytes as f64)
        .val("allowed_types", &strings(&e.allowed_types))
        .str("moderation", e.moderation.as_str())
        .done()
}

/// `{code, message}` of a client error (`ErrorInfo`).
pub fn error_info_to_js(e: &crate::error::Error) -> JsValue {
    Build::default().str("code", &e.code()).str("message", &e.message()).done()
}

/// The JS view of an attempt (`AttemptView`).
pub fn view_to_js(
    a: &AttemptRecord,
    progress: Option<(f64, f64)>,
    driven_here: bool,
    file_held: bool,
    file_kept: bool,
    online: bool,
) -> JsValue {
    let total = a.file.size as f64;
    let (sent, total) = match (a.transfer, progress) {
        (Transfer::Uploaded, _) => (total, total),
        (Transfer::Uploading, Some(p)) => p,
        _ => (0.0, total),
    };
    let error = a.error.as_ref().map(|e| Build::default().str("code", &e.code).str("message", &e.message).done());
    Build::default()
        .str("id", &a.id.to_string())
        .str("event", &a.event)
        .str("fileName", &a.file.name)
        .num("size", a.file.size as f64)
        .str("type", &a.file.content_type)
        .num("lastModified", a.file.last_modified as f64)
        .opt_str("objectKey", a.object_key.as_deref())
        .str("transfer", a.transfer.as_str())
        .num("bytesSent", sent)
        .num("bytesTotal", total)
        .str("confirmation", a.confirmation.as_str())
        .str("moderation", a.moderation.as_str())
        .val("media", &a.media.as_ref().map(media_summary_to_js).unwrap_or(JsValue::NULL))
        .val("error", &error.unwrap_or(JsValue::NULL))
        .num("retries", f64::from(a.retries))
        .opt_num("nextRetryAt", a.next_retry_at.map(|t| t as f64))
        .num("createdAt", a.created_at as f64)
        .num("updatedAt", a.updated_at as f64)
        .opt_str("replaces", opt_uuid(a.replaces).as_deref())
        .opt_str("replacedBy", opt_uuid(a.replaced_by).as_deref())
        .bool("terminal", a.is_terminal())
        .bool("drivenHere", driven_here)
        .bool("fileHeld", file_held)
        .bool("fileKept", file_kept)
        .bool("paused", !online && !a.is_terminal() && !a.needs_file())
        .done()
}

use wasm_bindgen::JsCast;
