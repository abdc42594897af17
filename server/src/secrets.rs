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

/// HMAC-SHA256 signer with the server's secret key.
#[derive(Clone)]
pub struct Signer {
    key: Vec<u8>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(..)")
    }
}

impl Signer {
    /// A signer with this secret key.
    pub fn new(key: Vec<u8>) -> Self {
        Signer { key }
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC accepts any key length")
    }

    /// The hex signature of `message`.
    pub fn sign(&self, message: &str) -> String {
        let mut mac = self.mac();
        mac.update(message.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Checks a hex signature of `message` in constant time.
    pub fn verify(&self, message: &str, signature_hex: &str) -> bool {
        let Ok(sig) = hex::decode(signature_hex) else {
            return false;
        };
        let mut mac = self.mac();
        mac.update(message.as_bytes());
        mac.verify_slice(&sig).is_ok()
    }
}
