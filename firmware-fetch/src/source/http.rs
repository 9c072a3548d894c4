//! A linux-firmware tree over HTTP(S): upstream's git web "plain" view, a mirror, or a
//! local server. The git tree stores no symlinks, so links come from `<base>/WHENCE`.

use super::{SourceError, Supplied};
use crate::PinnedFile;
use crate::cache::{Cache, StoreError, StoreOutcome};
use crate::links::LinkTable;
use crate::progress::Progress;
use std::io::Read;
use std::time::Duration;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(15)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// `Ok(None)` for 404; `Err` for anything that says the server is not usable.
fn get(agent: &ureq::Agent, url: &str) -> Result<Option<ureq::http::Response<ureq::Body>>, String> {
    match agent.get(url).call() {
        Ok(resp) => Ok(Some(resp)),
        Err(ureq::Error::StatusCode(404)) => Ok(None),
        Err(e) => Err(format!("{url}: {e}")),
    }
}

pub(super) fn supply_from_http(
    base: &str,
    wanted: &[&'static PinnedFile],
    cache: &Cache,
    progress: &Progress,
) -> Result<Supplied, SourceError> {
    let agent = agent();
    // WHENCE is optional (a plain directory served over HTTP has real files at every path),
    // but failing to reach the server at all makes the source unusable.
    let links = match get(&agent, &format!("{base}/WHENCE"))? {
        Some(resp) => {
            let mut text = String::new();
            resp.into_body()
                .into_reader()
                .take(16 << 20)
                .read_to_string(&mut text)
                .map_err(|e| format!("{base}/WHENCE: {e}"))?;
            LinkTable::from_whence(&text)
        }
        None => LinkTable::new(),
    };

    let mut supplied = Supplied::default();
    for &file in wanted {
        let remote = links
            .resolve(file.path)
            .unwrap_or_else(|| file.path.to_owned());
        let url = format!("{base}/{remote}");
        let Some(resp) = get(&agent, &url)? else {
            continue;
        };
        let body = resp.into_body();
        let bar = progress.bytes(
            body.content_length().unwrap_or(0),
            format!("GET {}", file.path),
        );
        let mut reader = bar.wrap_read(body.into_reader());
        let outcome = cache.store(file, &mut reader);
        bar.finish_and_clear();
        match outcome {
            Ok(StoreOutcome::Stored) => supplied.stored.push(file),
            Ok(StoreOutcome::Mismatch(m)) => supplied.mismatched.push((file, m)),
            // A broken download makes the server unusable for this run.
            Err(StoreError::Read(e)) => return Err(format!("{url}: {e}").into()),
            Err(StoreError::Write { path, error }) => {
                return Err(SourceError::CacheWrite { path, error });
            }
        }
    }
    Ok(supplied)
}
