//! The three browser engines of the browser and end-to-end layers:
//! Chromium, Firefox ESR and WebKitGTK (Safari's engine).
//!
//! Each is found, or installed when missing (Debian packages as root;
//! geckodriver from crates.io). On a user's machine an engine that cannot be
//! had is skipped with one line; under CI (`CI=true`) every engine is
//! required, and failing to install one fails the layer.
//!
//! WebKit runs twice in the browser layer: in the stock WebKitWebDriver
//! profile, which is ephemeral and behaves like Safari's private browsing
//! (IndexedDB refuses Blobs), and in a persistent profile like Safari's normal
//! windows (tests/webkit/persistent-browser, a small WebKitGTK browser in
//! Python, given to WebKitWebDriver by tests/webkit/webdriver-persistent).
//! WebKitWebDriver needs an X display: WebKit runs under `xvfb-run`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::setup::{Result, apt_install, find, root, sh};

/// geckodriver, installed with `cargo install` when missing (tested here).
const GECKODRIVER_VERSION: &str = "0.37.1";

/// Whether this is a CI run (`CI=true`): every engine is then required.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Firefox ESR and geckodriver.
pub struct Firefox {
    /// The browser binary.
    pub browser: PathBuf,
    /// geckodriver.
    pub driver: PathBuf,
}

/// WebKitGTK's WebDriver and an X server to run it in.
pub struct WebKit {
    /// WebKitWebDriver.
    pub driver: PathBuf,
    /// `xvfb-run`.
    pub xvfb_run: PathBuf,
    /// Whether the persistent-profile browser can run (python3-gi and
    /// WebKit2 4.1 introspection data).
    pub persistent: bool,
}

/// The engines this run has (Chromium is always required).
pub struct Engines {
    /// Chromium and ChromeDriver.
    pub chromium: (PathBuf, PathBuf),
    /// Firefox, unless skipped.
    pub firefox: Option<Firefox>,
    /// WebKit, unless skipped.
    pub webkit: Option<WebKit>,
}

impl Engines {
    /// WebKit for the e2e suite, which needs both profiles.
    pub fn e2e_webkit(&self) -> Option<&WebKit> {
        self.webkit.as_ref().filter(|w| w.persistent)
    }

    /// `chromium,firefox,webkit` (those present), for the e2e suite.
    pub fn names(&self) -> String {
        let mut names = vec!["chromium"];
        if self.firefox.is_some() {
            names.push("firefox");
        }
        if self.e2e_webkit().is_some() {
            names.push("webkit");
        }
        names.join(",")
    }
}

/// An engine that could not be had: an error under CI, else one line and a skip.
fn missing<T>(layer: &str, engine: &str, why: String) -> Result<Option<T>> {
    if is_ci() {
        return Err(format!("{engine} is required under CI (CI=true) but {why}"));
    }
    eprintln!("{layer} tests: skipping {engine}: {why}");
    Ok(None)
}

fn firefox_browser() -> Option<PathBuf> {
    find("firefox-esr").or_else(|| find("firefox"))
}

fn ensure_firefox(layer: &str) -> Result<Option<Firefox>> {
    if firefox_browser().is_none()
        && let Err(e) = apt_install(&["firefox-esr"])
    {
        return missing(layer, "Firefox", format!("Firefox ESR is not installed ({e})"));
    }
    let Some(browser) = firefox_browser() else {
        return missing(layer, "Firefox", "firefox-esr was installed but is not on PATH".into());
    };
    if find("geckodriver").is_none() {
        eprintln!("installing geckodriver {GECKODRIVER_VERSION} (a minute or two, once)");
        if let Err(e) = sh(Command::new("cargo").args(["install", "geckodriver", "--version", GECKODRIVER_VERSION])) {
            return missing(layer, "Firefox", format!("geckodriver could not be installed ({e})"));
        }
    }
    let Some(driver) = find("geckodriver") else {
        return missing(layer, "Firefox", "geckodriver was installed but is not on PATH".into());
    };
    Ok(Some(Firefox { browser, driver }))
}

/// Whether Debian's python3 can load WebKit2 4.1 through GObject introspection.
fn persistent_browser_runs() -> bool {
    Command::new("/usr/bin/python3")
        .args(["-c", "import gi; gi.require_version('Gtk', '3.0'); gi.require_version('WebKit2', '4.1'); from gi.repository import WebKit2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn webkit_driver() -> Option<PathBuf> {
    find("WebKitWebDriver")
}

fn ensure_webkit(layer: &str) -> Result<Option<WebKit>> {
    // WebKitGTK plays media through GStreamer: a video's shareable MP4
    // (H.264, AAC) needs its libav plugins, the MP4 demuxer the good ones.
    let have_media = || {
        ["gstreamer1.0-libav", "gstreamer1.0-plugins-good"].iter().all(|p| {
            Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
    };
    let have_all = || {
        webkit_driver().is_some()
            && find("xvfb-run").is_some()
            && find("xauth").is_some()
            && persistent_browser_runs()
            && have_media()
    };
    if !have_all()
        && let Err(e) = apt_install(&[
            "webkit2gtk-driver",
            "xvfb",
            "xauth",
            "python3-gi",
            "gir1.2-webkit2-4.1",
            "gstreamer1.0-libav",
            "gstreamer1.0-plugins-good",
        ])
        && (webkit_driver().is_none() || find("xvfb-run").is_none())
    {
        return missing(layer, "WebKit", format!("WebKitGTK's WebDriver or Xvfb is not installed ({e})"));
    }
    let (Some(driver), Some(xvfb_run)) = (webkit_driver(), find("xvfb-run")) else {
        return missing(layer, "WebKit", "webkit2gtk-driver and xvfb were installed but are not on PATH".into());
    };
    let persistent = persistent_browser_runs();
    if !persistent {
        if is_ci() {
            return Err("WebKit's persistent profile is required under CI (CI=true) but python3-gi with gir1.2-webkit2-4.1 does not load".into());
        }
        eprintln!(
            "{layer} tests: skipping WebKit's persistent profile: python3-gi with gir1.2-webkit2-4.1 does not load"
        );
    }
    Ok(Some(WebKit { driver, xvfb_run, persistent }))
}

/// Every engine for `layer`, installing what is missing.
pub fn ensure_engines(layer: &str) -> Result<Engines> {
    let chromium = crate::setup::ensure_chromium()?;
    let firefox = ensure_firefox(layer)?;
    let webkit = ensure_webkit(layer)?;
    Ok(Engines { chromium, firefox, webkit })
}

/// One run of the wasm browser tests: an engine (and profile) and how to start it.
pub struct WasmRun {
    /// `chromium`, `firefox`, `webkit-private`, `webkit-persistent`.
    pub name: &'static str,
    /// The wasm-bindgen-test-runner driver variable and its value.
    driver: (&'static str, PathBuf),
    /// Extra environment.
    env: Vec<(&'static str, OsString)>,
    /// `xvfb-run`, for engines that need an X display.
    xvfb_run: Option<PathBuf>,
}

impl WasmRun {
    /// `cargo` with this engine's environment (under `xvfb-run` where needed).
    pub fn cargo(&self) -> Command {
        let mut cmd = match &self.xvfb_run {
            Some(xvfb) => {
                let mut c = Command::new(xvfb);
                c.args(["-a", "-s", "-screen 0 1280x1024x24", "cargo"]);
                c
            }
            None => Command::new("cargo"),
        };
        // The runner takes the first driver variable it finds.
        for var in ["GECKODRIVER", "SAFARIDRIVER", "CHROMEDRIVER", "MSEDGEDRIVER"] {
            cmd.env_remove(var).env_remove(format!("{var}_REMOTE")).env_remove(format!("{var}_ARGS"));
        }
        cmd.env(self.driver.0, &self.driver.1);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }
}

/// The wasm test runs of these engines, Chromium first.
pub fn wasm_runs(engines: &Engines) -> Vec<WasmRun> {
    let mut runs = vec![WasmRun {
        name: "chromium",
        driver: ("CHROMEDRIVER", engines.chromium.1.clone()),
        env: Vec::new(),
        xvfb_run: None,
    }];
    if let Some(f) = &engines.firefox {
        // The runner adds -headless itself; --binary: Debian names it firefox-esr.
        let mut args = OsString::from("--binary ");
        args.push(&f.browser);
        runs.push(WasmRun {
            name: "firefox",
            driver: ("GECKODRIVER", f.driver.clone()),
            env: vec![("GECKODRIVER_ARGS", args)],
            xvfb_run: None,
        });
    }
    if let Some(w) = &engines.webkit {
        runs.push(WasmRun {
            name: "webkit-private",
            driver: ("SAFARIDRIVER", w.driver.clone()),
            env: Vec::new(),
            xvfb_run: Some(w.xvfb_run.clone()),
        });
        if w.persistent {
            runs.push(WasmRun {
                name: "webkit-persistent",
                driver: ("SAFARIDRIVER", root().join("tests/webkit/webdriver-persistent")),
                env: vec![("UPLOAD_ONCE_WEBKITWEBDRIVER", w.driver.clone().into())],
                xvfb_run: Some(w.xvfb_run.clone()),
            });
        }
    }
    runs
}

/// The versions of the engines, for the layer's summary.
pub fn versions(engines: &Engines) -> Vec<String> {
    let version = |program: &PathBuf, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_owned())
            .unwrap_or_default()
    };
    let mut out = vec![version(&engines.chromium.0, &["--version"])];
    if let Some(f) = &engines.firefox {
        out.push(format!(
            "{} (geckodriver {})",
            version(&f.browser, &["--version"]),
            version(&f.driver, &["--version"]).trim_start_matches("geckodriver ")
        ));
    }
    if engines.webkit.is_some() {
        let v = crate::setup::output("dpkg-query", &["-W", "-f=${Version}", "libwebkit2gtk-4.1-0"])
            .unwrap_or_else(|| "?".into());
        out.push(format!("WebKitGTK {v}"));
    }
    out
}
