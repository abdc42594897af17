//! One wrapper around an [`ObjectStore`] for everything that watches or
//! changes its calls: the metrics time every call ([`crate::metrics`]), the
//! test hooks hold HEADs, and the tests gate, slow, count or fail calls.
//!
//! An [`Interceptor`] names only what it changes: every method has a
//! default that changes nothing. [`Intercepted`] forwards each store call
//! through it, so a new store method is forwarded here, once.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use upload_once_core::time::UnixMillis;
use upload_once_core::wire::UploadInstruction;

use super::{GetAnswer, ListedPart, ObjectBody, ObjectMeta, ObjectStore, PartGrant, PutGrant};
use crate::error::Result;

/// A call of the store that goes over the wire (signing is local and is
/// not intercepted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// [`ObjectStore::create_multipart`].
    CreateMultipart,
    /// [`ObjectStore::list_parts`].
    ListParts,
    /// [`ObjectStore::complete_multipart`].
    CompleteMultipart,
    /// [`ObjectStore::abort_multipart`].
    AbortMultipart,
    /// [`ObjectStore::head`].
    Head,
    /// [`ObjectStore::get`].
    Get,
    /// [`ObjectStore::get_range`].
    GetRange,
    /// [`ObjectStore::put`].
    Put,
    /// [`ObjectStore::delete`].
    Delete,
    /// [`ObjectStore::list`].
    List,
    /// [`ObjectStore::probe`].
    Probe,
}

impl Operation {
    /// The metrics' `operation` label: a range read is a `get`.
    pub fn label(self) -> &'static str {
        match self {
            Operation::CreateMultipart => "create_multipart",
            Operation::ListParts => "list_parts",
            Operation::CompleteMultipart => "complete_multipart",
            Operation::AbortMultipart => "abort_multipart",
            Operation::Head => "head",
            Operation::Get | Operation::GetRange => "get",
            Operation::Put => "put",
            Operation::Delete => "delete",
            Operation::List => "list",
            Operation::Probe => "probe",
        }
    }
}

/// One call as an interceptor sees it.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// Which call.
    pub operation: Operation,
    /// The object key it is about (empty for `list` and `probe`).
    pub key: &'a str,
    /// The multipart upload it is about, if any.
    pub upload_id: Option<&'a str>,
}

/// What watches or changes a store's calls. Every method defaults to
/// changing nothing.
#[async_trait]
pub trait Interceptor: Send + Sync + 'static {
    /// Before the call reaches the store: may wait, or answer an error in
    /// the store's place.
    async fn before(&self, _call: Call<'_>) -> Result<()> {
        Ok(())
    }

    /// After the store answered (`failed` when it answered an error), before
    /// the caller sees it: may wait, or turn a success into an error (an
    /// answer lost on its way back).
    async fn after(&self, _call: Call<'_>, _started: Instant, _failed: bool) -> Result<()> {
        Ok(())
    }

    /// Changes what a HEAD (or a read) reported of an object.
    fn meta(&self, meta: ObjectMeta) -> ObjectMeta {
        meta
    }

    /// Changes what the store listed of an upload's parts.
    fn parts(&self, parts: Vec<ListedPart>) -> Vec<ListedPart> {
        parts
    }
}

/// A shared interceptor intercepts as its target does (a test keeps one end
/// to read its counters).
#[async_trait]
impl<T: Interceptor> Interceptor for Arc<T> {
    async fn before(&self, call: Call<'_>) -> Result<()> {
        (**self).before(call).await
    }

    async fn after(&self, call: Call<'_>, started: Instant, failed: bool) -> Result<()> {
        (**self).after(call, started, failed).await
    }

    fn meta(&self, meta: ObjectMeta) -> ObjectMeta {
        (**self).meta(meta)
    }

    fn parts(&self, parts: Vec<ListedPart>) -> Vec<ListedPart> {
        (**self).parts(parts)
    }
}

/// A store whose calls go through an [`Interceptor`].
pub struct Intercepted<I> {
    inner: Arc<dyn ObjectStore>,
    interceptor: I,
}

impl<I: Interceptor> Intercepted<I> {
    /// `inner`'s calls, through `interceptor`.
    pub fn new(inner: Arc<dyn ObjectStore>, interceptor: I) -> Intercepted<I> {
        Intercepted { inner, interceptor }
    }

    async fn around<T: Send>(
        &self,
        call: Call<'_>,
        run: impl Future<Output = Result<T>> + Send,
        change: impl FnOnce(T) -> T + Send,
    ) -> Result<T> {
        self.interceptor.before(call).await?;
        let started = Instant::now();
        let answer = run.await;
        self.interceptor.after(call, started, answer.is_err()).await?;
        answer.map(change)
    }
}

fn call<'a>(operation: Operation, key: &'a str) -> Call<'a> {
    Call { operation, key, upload_id: None }
}

fn upload_call<'a>(operation: Operation, key: &'a str, upload_id: &'a str) -> Call<'a> {
    Call { operation, key, upload_id: Some(upload_id) }
}

#[async_trait]
impl<I: Interceptor> ObjectStore for Intercepted<I> {
    fn presign_put(&self, grant: &PutGrant<'_>) -> UploadInstruction {
        self.inner.presign_put(grant)
    }

    async fn create_multipart(&self, key: &str, content_type: &str) -> Result<String> {
        let run = self.inner.create_multipart(key, content_type);
        self.around(call(Operation::CreateMultipart, key), run, |id| id).await
    }

    fn presign_part(&self, grant: &PartGrant<'_>) -> UploadInstruction {
        self.inner.presign_part(grant)
    }

    async fn list_parts(&self, key: &str, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        let run = self.inner.list_parts(key, upload_id);
        let change = |parts: Option<Vec<ListedPart>>| parts.map(|p| self.interceptor.parts(p));
        self.around(upload_call(Operation::ListParts, key, upload_id), run, change).await
    }

    async fn complete_multipart(&self, key: &str, upload_id: &str, parts: &[ListedPart]) -> Result<()> {
        let run = self.inner.complete_multipart(key, upload_id, parts);
        self.around(upload_call(Operation::CompleteMultipart, key, upload_id), run, |()| ()).await
    }

    async fn abort_multipart(&self, key: &str, upload_id: &str) -> Result<()> {
        let run = self.inner.abort_multipart(key, upload_id);
        self.around(upload_call(Operation::AbortMultipart, key, upload_id), run, |()| ()).await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>> {
        let change = |meta: Option<ObjectMeta>| meta.map(|m| self.interceptor.meta(m));
        self.around(call(Operation::Head, key), self.inner.head(key), change).await
    }

    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        let change = |read: Option<(ObjectMeta, ObjectBody)>| read.map(|(m, body)| (self.interceptor.meta(m), body));
        self.around(call(Operation::Get, key), self.inner.get(key), change).await
    }

    async fn get_range(&self, key: &str, first: u64, last: u64) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        let change = |read: Option<(ObjectMeta, ObjectBody)>| read.map(|(m, body)| (self.interceptor.meta(m), body));
        self.around(call(Operation::GetRange, key), self.inner.get_range(key, first, last), change).await
    }

    async fn put(&self, key: &str, content_type: &str, bytes: Bytes) -> Result<ObjectMeta> {
        let run = self.inner.put(key, content_type, bytes);
        self.around(call(Operation::Put, key), run, |meta| meta).await
    }

    async fn put_file(&self, key: &str, content_type: &str, path: &std::path::Path) -> Result<ObjectMeta> {
        let run = self.inner.put_file(key, content_type, path);
        self.around(call(Operation::Put, key), run, |meta| meta).await
    }

    fn presign_get(&self, key: &str, expires_at: UnixMillis, answer: &GetAnswer<'_>) -> Option<String> {
        self.inner.presign_get(key, expires_at, answer)
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.around(call(Operation::Delete, key), self.inner.delete(key), |()| ()).await
    }

    async fn list(&self) -> Result<Vec<String>> {
        self.around(call(Operation::List, ""), self.inner.list(), |keys| keys).await
    }

    async fn probe(&self) -> Result<()> {
        self.around(call(Operation::Probe, ""), self.inner.probe(), |()| ()).await
    }
}
