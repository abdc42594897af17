//! `upload-once-s3-server`: a real S3 implementation on loopback for the
//! server tests, the browser tests and the demo. It is `s3s` (SigV4
//! signatures, presigned-URL expiry, signed headers such as Content-Type)
//! over `s3s-fs` (objects as files, `If-None-Match: *`,
//! `x-amz-checksum-sha256`), with two things added: CORS, which s3s-fs does
//! not answer, so a browser page on an allowed origin can PUT through a
//! presigned URL and read the ETag; and checksums and multipart uploads
//! that behave like S3's where s3s-fs's do not (`store.rs`: an object's or a
//! part's checksum verified before anything is filed, `NoSuchUpload`, parts
//! listed with their ETags and checksums, page by page, no part filed after
//! an abort), and a PUT without `Content-Length` refused as S3 refuses it
//! (`411 MissingContentLength`; s3s takes it).
//!
//! Test-only: never deploy it. Known gaps of s3s-fs 0.14.1 are listed in
//! docs/deploy.md ("The loopback test store").

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::{S3Service, S3ServiceBuilder};

mod store;

/// Flags, each with an environment equivalent.
#[derive(Debug, Parser)]
#[command(name = "upload-once-s3-server", about = "Test-only S3-compatible server (s3s-fs) with CORS")]
struct Opt {
    /// Address to listen on (port 0 picks a free one; the address is printed).
    #[arg(long, env = "S3_SERVER_LISTEN", default_value = "127.0.0.1:9000")]
    listen: SocketAddr,

    /// Directory holding the buckets (one folder each).
    #[arg(long, env = "S3_SERVER_ROOT")]
    root: PathBuf,

    /// Access key id clients sign with.
    #[arg(long, env = "AWS_ACCESS_KEY_ID")]
    access_key: String,

    /// Secret access key clients sign with.
    #[arg(long, env = "AWS_SECRET_ACCESS_KEY", hide_env_values = true)]
    secret_key: String,

    /// Buckets to create at start if missing (repeatable or comma-separated).
    #[arg(long = "bucket", env = "S3_SERVER_BUCKETS", value_delimiter = ',')]
    buckets: Vec<String>,

    /// Origins browsers may call from (repeatable or comma-separated); `*`
    /// allows any origin.
    #[arg(long = "allowed-origin", env = "S3_SERVER_ALLOWED_ORIGINS", value_delimiter = ',')]
    allowed_origins: Vec<String>,
}

/// The CORS rule this test store applies: the one docs/deploy.md asks for
/// on a real bucket.
#[derive(Clone)]
struct Cors {
    origins: Vec<String>,
}

impl Cors {
    fn allowed(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o == "*" || o == origin)
    }

    fn decorate<B>(&self, origin: Option<&HeaderValue>, response: &mut Response<B>) {
        let Some(origin) = origin.filter(|o| o.to_str().is_ok_and(|o| self.allowed(o))) else {
            return;
        };
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("ETag, Retry-After, x-amz-checksum-sha256"),
        );
        h.append(header::VARY, HeaderValue::from_static("Origin"));
    }

    fn preflight(&self, req: &Request<Incoming>) -> Response<s3s::Body> {
        let mut response = Response::new(s3s::Body::empty());
        let origin = req.headers().get(header::ORIGIN);
        let method_ok = req
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_METHOD)
            .is_some_and(|m| matches!(m.as_bytes(), b"PUT" | b"GET" | b"HEAD"));
        if !method_ok || !origin.and_then(|o| o.to_str().ok()).is_some_and(|o| self.allowed(o)) {
            *response.status_mut() = StatusCode::FORBIDDEN;
            return response;
        }
        self.decorate(origin, &mut response);
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("PUT, GET, HEAD"));
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("content-type, if-none-match, x-amz-checksum-sha256"),
        );
        h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        response
    }
}

/// S3's answer to a PUT without `Content-Length` (AWS's common request
/// headers: it "is required for PUTs"): `411 MissingContentLength`. s3s
/// takes such a PUT, chunked or empty.
fn missing_content_length() -> Response<s3s::Body> {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>MissingContentLength</Code>\
                <Message>You must provide the Content-Length HTTP header.</Message></Error>";
    let mut response = Response::new(s3s::Body::from(body.to_owned()));
    *response.status_mut() = StatusCode::LENGTH_REQUIRED;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/xml"));
    response
}

async fn handle(s3: S3Service, cors: Cors, req: Request<Incoming>) -> Result<Response<s3s::Body>, Infallible> {
    if req.method() == Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        return Ok(cors.preflight(&req));
    }
    let origin = req.headers().get(header::ORIGIN).cloned();
    if req.method() == Method::PUT && !req.headers().contains_key(header::CONTENT_LENGTH) {
        let mut response = missing_content_length();
        cors.decorate(origin.as_ref(), &mut response);
        return Ok(response);
    }
    let mut response = match hyper::service::Service::call(&s3, req).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("upload-once-s3-server: {e:?}");
            let mut r = Response::new(s3s::Body::empty());
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        }
    };
    cors.decorate(origin.as_ref(), &mut response);
    Ok(response)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let opt = Opt::parse();
    for bucket in &opt.buckets {
        if let Err(e) = std::fs::create_dir_all(opt.root.join(bucket)) {
            eprintln!("upload-once-s3-server: cannot create bucket {bucket}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    let fs = match store::Store::new(opt.root.clone()) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("upload-once-s3-server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let s3 = {
        let mut b = S3ServiceBuilder::new(fs);
        b.set_auth(SimpleAuth::from_single(opt.access_key.clone(), opt.secret_key.clone()));
        b.build()
    };
    let cors = Cors { origins: opt.allowed_origins.clone() };
    let listener = match tokio::net::TcpListener::bind(opt.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("upload-once-s3-server: cannot listen on {}: {e}", opt.listen);
            return std::process::ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().expect("a bound socket has an address");
    println!("upload-once-s3-server listening on http://{addr}");
    let server = ConnBuilder::new(TokioExecutor::new());
    let mut stop = std::pin::pin!(async {
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
            tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = term.recv() => {} }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    });
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(_) => continue,
            },
            () = stop.as_mut() => break,
        };
        let (s3, cors, server) = (s3.clone(), cors.clone(), server.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(s3.clone(), cors.clone(), req));
            let _ = server.serve_connection(TokioIo::new(socket), service).await;
        });
    }
    std::process::ExitCode::SUCCESS
}
