//! Tokens, hashes and signatures: session and host tokens, guest codes,
//! object keys, and the HMAC that binds a signed URL to its parameters.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Fills `buf` from the operating system's CSPRNG.
pub fn random_bytes(buf: &mut [u8]) {
    getrandom::fill(buf).expect("the operating system's random source failed");
}

/// A random bearer token: 32 bytes (256 bits) as unpadded base64url
/// (RFC 4648 §5).
pub fn new_token() -> String {
    let mut b = [0u8; 32];
    random_bytes(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

/// A guest code: 16 characters of Crockford's base32, which has no
/// look-alike letters (80 bits), easy to type from a printed card.
pub fn new_guest_code() -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut b = [0u8; 16];
    random_bytes(&mut b);
    b.iter().map(|x| ALPHABET[usize::from(x & 31)] as char).collect()
}

/// A server-generated object key for an event: never derived from
/// anything the client sent.
pub fn new_object_key(event_slug: &str) -> String {
    let mut b = [0u8; 16];
    random_bytes(&mut b);
    format!("{event_slug}/{}", hex::encode(b))
}

/// SHA-256 as lowercase hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// How tokens are stored: only their SHA-256 is kept, so a copy of the
/// database does not hand out sessions.
pub fn token_hash(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// Compares two secrets in time independent of where they differ (only
/// their lengths may show).
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// One signing key and its id (the `kid` of media URLs).
#[derive(Clone)]
struct SigningKey {
    id: String,
    key: Vec<u8>,
}

/// HMAC-SHA256 signer: the server's current secret key, which signs, and
/// the previous ones, which still verify (so the key can be rotated without
/// breaking the links and upload URLs already handed out).
#[derive(Clone)]
pub struct Signer {
    current: std::sync::Arc<SigningKey>,
    previous: std::sync::Arc<[SigningKey]>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(..)")
    }
}

/// The id a key goes by when none is configured: the first 8 hex digits of
/// an HMAC of a fixed text under the key (the same on every instance, and
/// telling nothing of the key).
pub fn derived_key_id(key: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(b"upload-once key id");
    hex::encode(mac.finalize().into_bytes())[..8].to_owned()
}

/// Whether `id` can name a signing key: 1-32 of `A-Z a-z 0-9 _ -`.
pub fn is_valid_key_id(id: &str) -> bool {
    (1..=32).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Signer {
    /// A signer with this secret key alone, under its derived id.
    pub fn new(key: Vec<u8>) -> Self {
        let id = derived_key_id(&key);
        Signer::with_keys((id, key), Vec::new())
    }

    /// A signer with a current key and previous ones, each with its id.
    pub fn with_keys(current: (String, Vec<u8>), previous: Vec<(String, Vec<u8>)>) -> Self {
        let key = |(id, key): (String, Vec<u8>)| SigningKey { id, key };
        Signer { current: std::sync::Arc::new(key(current)), previous: previous.into_iter().map(key).collect() }
    }

    /// The id of the key that signs.
    pub fn key_id(&self) -> &str {
        &self.current.id
    }

    fn keys(&self) -> impl Iterator<Item = &SigningKey> {
        std::iter::once(self.current.as_ref()).chain(self.previous.iter())
    }

    fn mac(key: &[u8]) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length")
    }

    /// The hex signature of `message`, by the current key.
    pub fn sign(&self, message: &str) -> String {
        let mut mac = Self::mac(&self.current.key);
        mac.update(message.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Checks a hex signature of `message` by any of the keys (current
    /// first), each in constant time.
    pub fn verify(&self, message: &str, signature_hex: &str) -> bool {
        let Ok(sig) = hex::decode(signature_hex) else {
            return false;
        };
        self.keys().any(|k| {
            let mut mac = Self::mac(&k.key);
            mac.update(message.as_bytes());
            mac.verify_slice(&sig).is_ok()
        })
    }

    /// Checks a hex signature of `message` by the key named `key_id`;
    /// `None` when no key of this server has that id.
    pub fn verify_with(&self, key_id: &str, message: &str, signature_hex: &str) -> Option<bool> {
        let key = self.keys().find(|k| constant_time_eq(&k.id, key_id))?;
        let Ok(sig) = hex::decode(signature_hex) else {
            return Some(false);
        };
        let mut mac = Self::mac(&key.key);
        mac.update(message.as_bytes());
        Some(mac.verify_slice(&sig).is_ok())
    }
}
