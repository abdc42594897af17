//! Tokens, hashes and signatures: session and host tokens, guest codes,
//! object keys, and the HMAC that binds a signed URL to its parameters.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Fills `buf` from the operating system's CSPRNG.
pub fn random_bytes(buf: &mut [u8]) {
    getrandom::fill(buf).expect("the operating system's random source failed");
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// Decodes lowercase or uppercase hex.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Unpadded base64url (RFC 4648 §5).
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// A random bearer token: 32 bytes (256 bits) as base64url.
pub fn new_token() -> String {
    let mut b = [0u8; 32];
    random_bytes(&mut b);
    base64url(&b)
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
    format!("{event_slug}/{}", hex(&b))
}

/// SHA-256 as lowercase hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// How tokens are stored: only their SHA-256 is kept, so a copy of the
/// database does not hand out sessions.
pub fn token_hash(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// Compares two strings in time independent of where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        hex(&mac.finalize().into_bytes())
    }

    /// Checks a hex signature of `message` in constant time.
    pub fn verify(&self, message: &str, signature_hex: &str) -> bool {
        let Some(sig) = unhex(signature_hex) else { return false };
        let mut mac = self.mac();
        mac.update(message.as_bytes());
        mac.verify_slice(&sig).is_ok()
    }
}
