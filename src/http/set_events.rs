//! `GET /page-import-sets/{id}/events`: the set pushed as Server-Sent Events
//! (SPEC §15, as §6's stream): an event with the set each time a member's
//! resource changes, until the set's status is terminal or it is deleted.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use crate::auth::Actor;
use crate::changes::Subscriptions;
use crate::error::ApiError;
use crate::http::IdPath;
use crate::resource::Tagged;
use crate::state::AppState;

const KEEP_ALIVE: Duration = Duration::from_secs(15);
const REREAD_AFTER: Duration = Duration::from_millis(500);

/// One server-sent event of a set's `/events`, as the OpenAPI document
/// describes it.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct PageImportSetEvent {
    /// `page_import_set` or `deleted`
    event: String,
    /// The set's ETag (on `page_import_set` events)
    id: Option<String>,
    /// JSON: the set, or `{"id"}` for `deleted`
    data: String,
}

/// Follow one import set: the set first, then the set again whenever a
/// member changes, until its status is terminal or it is deleted.
#[utoipa::path(
    get, path = "/page-import-sets/{id}/events", operation_id = "followPageImportSet", tag = "page-import-sets",
    params(("id" = String, Path, description = "The set's id")),
    responses(
        (status = 200, description = "`text/event-stream`: `event: page_import_set` (`id:` = the set's ETag, `data:` = the set) on start and whenever a member changes; `event: deleted` (`data: {\"id\"}`) when deleted; `: keep-alive` every 15 s; ends after the set's status is terminal (`completed`, `failed`, `partial`) or a delete", content_type = "text/event-stream", body = PageImportSetEvent),
        (status = 401),
        (status = 404),
        (status = 503, description = "EVENTS_MAX_STREAMS streams are open on this replica, or the database is unavailable"),
    ),
    security(("bearer" = []))
)]
pub async fn follow(State(state): State<AppState>, actor: Actor, IdPath(id): IdPath) -> Result<Response, ApiError> {
    let members = state.import_sets().member_ids(&actor, &id).await?;
    // Subscribed before the first read, so no change can fall between them.
    let subscription = state.changes.subscribe_all(&members).ok_or(ApiError::TooManyStreams)?;
    let first = state.import_sets().visible(&actor, &id).await?.tagged();
    let follow = Follow {
        pending: Some(set_event(&first)),
        done: first.terminal,
        last_tag: first.tag,
        state,
        actor,
        id,
        subscription,
    };
    Ok(Sse::new(stream(follow))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response())
}

fn set_event(tagged: &Tagged) -> Event {
    Event::default()
        .event("page_import_set")
        .id(&tagged.tag)
        .data(String::from_utf8_lossy(&tagged.body))
}

struct Follow {
    state: AppState,
    actor: Actor,
    id: String,
    subscription: Subscriptions,
    last_tag: String,
    pending: Option<Event>,
    done: bool,
}

fn stream(follow: Follow) -> impl Stream<Item = Result<Event, Infallible>> {
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
    /// The next change worth an event: the set re-read after each member's
    /// notification, skipped while its tag is the last one sent; `deleted`
    /// once it is gone. `None` when the stream ends.
    async fn next_event(&mut self) -> Option<Event> {
        let mut reread = false;
        loop {
            if !self.wait(reread).await {
                return None;
            }
            match self.state.import_sets().visible(&self.actor, &self.id).await {
                Err(ApiError::NotFound) => {
                    self.done = true;
                    let data = serde_json::json!({ "id": self.id }).to_string();
                    return Some(Event::default().event("deleted").data(data));
                }
                Ok(view) => {
                    reread = false;
                    let tagged = view.tagged();
                    if tagged.tag == self.last_tag {
                        continue;
                    }
                    self.done = tagged.terminal;
                    self.last_tag = tagged.tag.clone();
                    return Some(set_event(&tagged));
                }
                Err(err) => {
                    reread = true;
                    tracing::warn!(set_id = %self.id, error = %err, "set event stream could not re-read its set");
                }
            }
        }
    }

    /// Waits for a member's next notification, or after a failed read a
    /// short while; false when the stream should end.
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
                changed = self.subscription.changed() => changed,
            }
        }
    }
}
