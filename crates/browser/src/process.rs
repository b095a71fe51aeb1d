//! The Chromium process: spawned in its own process group by a thread that lives as
//! long as the process (so `PR_SET_PDEATHSIG` fires when our process dies however it
//! dies), with a fresh profile folder; reaped and its whole group killed on close or
//! drop. [`kill_all`] kills every browser still running (for a Ctrl-C handler).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{BrowserError, SandboxMode, Viewport};

/// Process groups of the browsers this process started and has not reaped yet.
static LIVE_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kill every browser this process started (SIGKILL to each process group). Safe to
/// call from a Ctrl-C handler; the [`crate::Browser`] values become unusable.
pub fn kill_all() {
    let groups = LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for pgid in groups {
        // SAFETY: plain syscall on a process group we created.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

pub(crate) struct ChromiumProcess {
    pid: i32,
    exited: Arc<AtomicBool>,
    reaper: Option<std::thread::JoinHandle<()>>,
    profile: Option<tempfile::TempDir>,
}

/// The command line. The sandbox is off only when asked or, in `Auto`, when running
/// as root (Chromium refuses to start as root with its sandbox on).
pub(crate) fn args(
    profile: &Path,
    viewport: Viewport,
    sandbox: SandboxMode,
    dead_proxy: u16,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "--headless=new",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--remote-debugging-port=0",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-sync",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions",
        "--metrics-recording-only",
        "--password-store=basic",
        "--use-mock-keychain",
        "--mute-audio",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        "--font-render-hinting=none",
        "--dns-prefetch-disable",
        "--no-pings",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--proxy-server=http://127.0.0.1:{dead_proxy}"));
    a.push(format!("--user-data-dir={}", profile.display()));
    a.push(format!(
        "--window-size={},{}",
        viewport.width, viewport.height
    ));
    a.push(format!("--force-device-scale-factor={}", viewport.scale));
    if sandbox_off(sandbox) {
        a.push("--no-sandbox".into());
    }
    a.push("about:blank".into());
    a
}

pub(crate) fn sandbox_off(sandbox: SandboxMode) -> bool {
    match sandbox {
        SandboxMode::On => false,
        SandboxMode::Off => true,
        // SAFETY: geteuid has no preconditions.
        SandboxMode::Auto => unsafe { libc::geteuid() == 0 },
    }
}

/// A loopback port nothing listens on: bound, then released. The browser's proxy
/// points there, so whatever escapes request interception (WebSockets) cannot connect.
pub(crate) fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9)
}

/// Remove profile folders left by browsers whose process is gone (an earlier run that
/// was killed or aborted could not remove its own). Chromium's `SingletonLock` names
/// `host-pid` of the browser that holds a profile.
fn remove_stale_profiles() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    for e in entries.flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .starts_with("tvir-chromium-")
        {
            continue;
        }
        let Ok(lock) = std::fs::read_link(e.path().join("SingletonLock")) else {
            continue;
        };
        let lock = lock.to_string_lossy().to_string();
        let Some((h, pid)) = lock.rsplit_once('-') else {
            continue;
        };
        if h == host.trim() && pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl ChromiumProcess {
    /// Spawn Chromium and wait (≤ `wait`) for its DevTools websocket address.
    pub(crate) fn spawn(
        exe: &Path,
        viewport: Viewport,
        sandbox: SandboxMode,
        wait: Duration,
    ) -> Result<(ChromiumProcess, String), BrowserError> {
        let start_err = |message: String| BrowserError::Start {
            path: exe.display().to_string(),
            message,
        };
        let profile = tempfile::Builder::new()
            .prefix("tvir-chromium-")
            .tempdir()
            .map_err(|e| start_err(format!("profile folder: {e}")))?;
        remove_stale_profiles();
        let args = args(profile.path(), viewport, sandbox, dead_port());
        let tmp = profile.path().join("tmp");
        let _ = std::fs::create_dir_all(&tmp);
        let exe_owned = exe.to_path_buf();
        let exited = Arc::new(AtomicBool::new(false));
        let exited2 = exited.clone();
        let (tx, rx) = mpsc::channel::<Result<(i32, std::process::ChildStderr), String>>();
        // The spawning thread is the child's "parent" for PR_SET_PDEATHSIG: it stays
        // alive until the child exits.
        let reaper = std::thread::Builder::new()
            .name("tvir-chromium-reaper".into())
            .spawn(move || {
                let mut cmd = Command::new(&exe_owned);
                cmd.args(&args)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    // Chromium's own temporary files (singleton socket) inside the profile.
                    .env("TMPDIR", &tmp)
                    .process_group(0);
                // SAFETY: only async-signal-safe calls between fork and exec.
                unsafe {
                    cmd.pre_exec(|| {
                        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
                let mut child = match cmd.spawn() {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let pid = child.id() as i32;
                if let Ok(mut g) = LIVE_GROUPS.lock() {
                    g.push(pid);
                }
                let stderr = child.stderr.take().expect("piped stderr");
                let _ = tx.send(Ok((pid, stderr)));
                let _ = child.wait();
                exited2.store(true, Ordering::SeqCst);
            })
            .map_err(|e| start_err(format!("thread: {e}")))?;
        let (pid, stderr) = match rx.recv() {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                let _ = reaper.join();
                return Err(start_err(e));
            }
            Err(_) => {
                let _ = reaper.join();
                return Err(start_err("could not be started".into()));
            }
        };
        let mut process = ChromiumProcess {
            pid,
            exited,
            reaper: Some(reaper),
            profile: Some(profile),
        };
        // Read stderr for the DevTools address, then keep draining it (a full pipe
        // would block the browser). The last lines are kept for the error message.
        let (wtx, wrx) = mpsc::channel::<String>();
        let tail = Arc::new(Mutex::new(Vec::<String>::new()));
        let tail2 = tail.clone();
        std::thread::Builder::new()
            .name("tvir-chromium-stderr".into())
            .spawn(move || {
                let mut sent = false;
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if !sent {
                        if let Some(i) = line.find("ws://") {
                            let _ = wtx.send(line[i..].trim().to_string());
                            sent = true;
                            continue;
                        }
                        if let Ok(mut t) = tail2.lock() {
                            t.push(line);
                            if t.len() > 8 {
                                t.remove(0);
                            }
                        }
                    }
                }
            })
            .map_err(|e| start_err(format!("thread: {e}")))?;
        match wrx.recv_timeout(wait) {
            Ok(ws) => Ok((process, ws)),
            Err(_) => {
                process.kill();
                let tail = tail.lock().map(|t| t.join(" | ")).unwrap_or_default();
                Err(start_err(format!(
                    "no DevTools address within {} s{}",
                    wait.as_secs(),
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!(": {tail}")
                    }
                )))
            }
        }
    }

    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Wait up to `grace` for the browser to exit by itself.
    pub(crate) async fn wait_exit(&self, grace: Duration) {
        let deadline = std::time::Instant::now() + grace;
        while !self.exited.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM to the browser itself (it closes its windows and exits).
    pub(crate) fn terminate(&self) {
        if !self.exited.load(Ordering::SeqCst) {
            // SAFETY: plain syscall on the process we started (not yet reaped).
            unsafe {
                libc::kill(self.pid, libc::SIGTERM);
            }
        }
    }

    /// SIGKILL the whole process group, reap the browser, remove the profile.
    pub(crate) fn kill(&mut self) {
        // SAFETY: plain syscall on the process group we created.
        unsafe {
            libc::killpg(self.pid, libc::SIGKILL);
        }
        if let Some(r) = self.reaper.take() {
            let _ = r.join();
        }
        if let Ok(mut g) = LIVE_GROUPS.lock() {
            g.retain(|p| *p != self.pid);
        }
        if let Some(p) = self.profile.take() {
            let _ = p.close();
        }
    }
}

impl Drop for ChromiumProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
