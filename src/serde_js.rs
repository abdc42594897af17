//! Rust values to and from JS values through their serde derives
//! (serde-wasm-bindgen). The wire types of `upload-once-core`, the stored
//! records, the options and the views are each defined once; this is the
//! only bridge.

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::JsValue;

/// A Rust value as a plain JS value: objects for structs and maps, `null`
/// for `None`, numbers for integers up to 2^53.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, String> {
    let serializer =
        serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true).serialize_missing_as_null(true);
    value.serialize(&serializer).map_err(|e| e.to_string())
}

/// A JS value read as `T`; the error names what did not fit.
pub fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, String> {
    serde_wasm_bindgen::from_value(value).map_err(|e| e.to_string())
}
