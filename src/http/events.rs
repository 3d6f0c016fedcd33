//! `GET /page-imports/{id}/events`: the import's status pushed as
//! Server-Sent Events (SPEC §6), each event's id the strong `ETag` of
//! `GET /page-imports/{id}` (`resource::Tagged`).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use crate::auth::Actor;
use crate::changes::Subscription;
use crate::error::ApiError;
use crate::http::Deadline;
use crate::http::IdPath;
use crate::resource::{PageImportView, Tagged};
use crate::state::AppState;

const KEEP_ALIVE: Duration = Duration::from_secs(15);
const REREAD_AFTER: Duration = Duration::from_millis(500);

/// One server-sent event of `/events`, as the OpenAPI document describes it.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct PageImportEvent {
    /// `page_import` or `deleted`
    event: String,
    /// The resource's ETag (on `page_import` events)
    id: Option<String>,
    /// JSON: the resource, or `{"id"}` for `deleted`
    data: String,
}

/// Follow one import: the current resource first, then every change, until
/// it is `completed`, `failed` or deleted.
#[utoipa::path(
    get, path = "/page-imports/{id}/events", operation_id = "followPageImport", tag = "page-imports",
    params(("id" = String, Path, description = "The import's id")),
    responses(
        (status = 200, description = "`text/event-stream`: `event: page_import` (`id:` = the ETag, `data:` = the resource) on start and on every change; `event: deleted` (`data: {\"id\"}`) when deleted; `: keep-alive` every 15 s; ends after a terminal status or a delete", content_type = "text/event-stream", body = PageImportEvent),
        (status = 401),
        (status = 404),
        (status = 503, description = "EVENTS_MAX_STREAMS streams are open on this replica, or the database is unavailable"),
    ),
    security(("bearer" = []))
)]
pub async fn follow(
    State(state): State<AppState>,
    actor: Actor,
    deadline: Deadline,
    IdPath(id): IdPath,
) -> Result<Response, ApiError> {
    // Subscribed before the first read, so no change can fall between them.
    let subscription = state.changes.subscribe(&id).ok_or(ApiError::TooManyStreams)?;
    let first = state.imports().visible(&actor, &id, deadline.0).await?;
    let first = Tagged::of(&PageImportView::from(first));
    let stream = stream(state, actor, id, subscription, first);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response())
}

fn page_import_event(tagged: &Tagged) -> Event {
    Event::default()
        .event("page_import")
        .id(&tagged.tag)
        .data(String::from_utf8_lossy(&tagged.body))
}

struct Follow {
    state: AppState,
    actor: Actor,
    id: String,
    subscription: Subscription,
    last_tag: String,
    pending: Option<Event>,
    done: bool,
}

fn stream(
    state: AppState,
    actor: Actor,
    id: String,
    subscription: Subscription,
    first: Tagged,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let follow = Follow {
        pending: Some(page_import_event(&first)),
        done: first.terminal,
        last_tag: first.tag,
        state,
        actor,
        id,
        subscription,
    };
    futures::stream::unfold(follow, |mut f| async move {
        if let Some(event) = f.pending.take() {
            return Some((Ok(event), f));
        }
        if f.done {
            return None;
        }
        let event = f.next_event().await?;
        Some((Ok(event), f))
    })
}

impl Follow {
    /// The next change worth an event: the row re-read after each
    /// notification (or soon after a failed read), skipped while its tag
    /// is the last one sent; `deleted` once it is gone. `None` when the
    /// stream ends (shutdown, the notifications closed).
    async fn next_event(&mut self) -> Option<Event> {
        let mut reread = false;
        loop {
            if !self.wait(reread).await {
                return None;
            }
            let answer_by = std::time::Instant::now() + self.state.config.request_timeout;
            match self.state.imports().visible(&self.actor, &self.id, answer_by).await {
                Err(ApiError::NotFound) => {
                    self.done = true;
                    let data = serde_json::json!({ "id": self.id }).to_string();
                    return Some(Event::default().event("deleted").data(data));
                }
                Ok(row) => {
                    reread = false;
                    let tagged = Tagged::of(&PageImportView::from(row));
                    if tagged.tag == self.last_tag {
                        continue;
                    }
                    self.done = tagged.terminal;
                    self.last_tag = tagged.tag.clone();
                    return Some(page_import_event(&tagged));
                }
                Err(err) => {
                    reread = true;
                    tracing::warn!(page_import_id = %self.id, error = %err, "event stream could not re-read its row");
                }
            }
        }
    }

    /// Waits for the next notification, or, after a failed read (the
    /// database is restarting, say), a short while; false when the stream
    /// should end.
    async fn wait(&mut self, reread: bool) -> bool {
        let closing = self.state.changes.closing.clone();
        if reread {
            tokio::select! {
                () = closing.cancelled() => false,
                () = tokio::time::sleep(REREAD_AFTER) => true,
            }
        } else {
            tokio::select! {
                () = closing.cancelled() => false,
                changed = self.subscription.changes.changed() => changed.is_ok(),
            }
        }
    }
}
