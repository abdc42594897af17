//! The client's one error type. JS receives every error as an `Error`
//! object with a stable `code` property.

use upload_once_core::ErrorCode;
use upload_once_core::retry::Failure;
use wasm_bindgen::JsValue;

/// What can go wrong in the client.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// IndexedDB is missing, blocked or broken.
    StorageUnavailable(String),
    /// The browser refused the write: quota exceeded. Nothing was written.
    QuotaExceeded(String),
    /// The options are invalid.
    InvalidOptions(String),
    /// A file breaks the app's or the event's restrictions.
    Restriction(upload_once_core::Error),
    /// A write the page asked for was refused, as the store reported it
    /// (its code and words, e.g. `quota_exceeded`). Nothing was written.
    Stored(upload_once_core::Error),
    /// The server refused or did not answer.
    Request(Failure),
    /// No such attempt here.
    NotFound(String),
    /// The uploader was closed.
    Closed,
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The stable code.
    pub fn code(&self) -> String {
        match self {
            Error::StorageUnavailable(_) => ErrorCode::StorageUnavailable.as_str().into(),
            Error::QuotaExceeded(_) => ErrorCode::QuotaExceeded.as_str().into(),
            Error::InvalidOptions(_) => ErrorCode::InvalidOptions.as_str().into(),
            Error::Restriction(e) | Error::Stored(e) => e.code.as_str().into(),
            Error::Request(f) => f.code(),
            Error::NotFound(_) => ErrorCode::NotFound.as_str().into(),
            Error::Closed => ErrorCode::Closed.as_str().into(),
        }
    }

    /// A message for people.
    pub fn message(&self) -> String {
        match self {
            Error::StorageUnavailable(m) => {
                format!("this browser's storage (IndexedDB) is unavailable: {m}")
            }
            Error::QuotaExceeded(m) => format!("the browser's storage quota is exceeded: {m}"),
            Error::InvalidOptions(m) | Error::NotFound(m) => m.clone(),
            Error::Restriction(e) | Error::Stored(e) => e.message.clone(),
            Error::Request(f) => f.message(),
            Error::Closed => "the uploader was closed".into(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for Error {}

impl From<Error> for JsValue {
    fn from(e: Error) -> JsValue {
        let error = js_sys::Error::new(&e.message());
        error.set_name("UploadError");
        let _ = js_sys::Reflect::set(&error, &"code".into(), &JsValue::from_str(&e.code()));
        error.into()
    }
}
