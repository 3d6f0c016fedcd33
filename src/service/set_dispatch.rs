//! An import set's first attempts go out together (SPEC §15 "Capturing a
//! set"): one message, `{"schemaVersion": 2, "setId", "jobs"}`, holding one
//! capture slot until its last member ends. A dispatch pass picks only a
//! set's first queued member (`db::capture::pick`); here it leads the
//! set's other queued first attempts into the same dispatch, and the taken
//! attempts become one message per set. A member's later attempt (a retry,
//! a timeout's, a retryable failure's) is an ordinary attempt and goes
//! alone. Decision 0047.

use std::collections::{HashMap, HashSet};

use sqlx::PgConnection;

use page_import_contract::job::{deduplication_id, set_deduplication_id};

use crate::db::capture::{Picked, Taken};
use crate::db::outbox::NewMessage;
use crate::db::sets;
use crate::queue::messages::{capture_job_body, set_job_body, CaptureDestination, SetMember};

/// Members' ids → their set's id, for the attempts a pass dispatches as sets.
pub type SetsOf = HashMap<String, String>;

/// `picked`, each set member's first attempt followed by its set's other
/// first attempts still queued (in the set's order), and the set of each.
/// One set's members are picked once, whatever else was picked.
pub async fn with_followers(tx: &mut PgConnection, picked: Vec<Picked>) -> sqlx::Result<(Vec<Picked>, SetsOf)> {
    let firsts: Vec<&str> = picked
        .iter()
        .filter(|p| p.attempt == 1)
        .map(|p| p.page_import_id.as_str())
        .collect();
    let mut sets_of = SetsOf::new();
    if firsts.is_empty() {
        return Ok((picked, sets_of));
    }
    let mut leading: HashMap<String, sets::Leading> = sets::leading(tx, &firsts)
        .await?
        .into_iter()
        .map(|l| (l.leader.clone(), l))
        .collect();
    if leading.is_empty() {
        return Ok((picked, sets_of));
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(picked.len());
    for p in picked {
        if !seen.insert(p.page_import_id.clone()) {
            continue;
        }
        let lead = (p.attempt == 1).then(|| leading.remove(&p.page_import_id)).flatten();
        let organization_id = p.organization_id;
        out.push(p);
        let Some(lead) = lead else { continue };
        sets_of.insert(lead.leader, lead.set_id.clone());
        for follower in lead.followers {
            if seen.insert(follower.clone()) {
                sets_of.insert(follower.clone(), lead.set_id.clone());
                out.push(Picked {
                    page_import_id: follower,
                    attempt: 1,
                    organization_id,
                });
            }
        }
    }
    Ok((out, sets_of))
}

/// The messages of the attempts a pass took, in order: one per set (at its
/// first member's place, carrying its members in order, with the first's
/// trace, the set's create), one per other attempt. The set members' slots
/// become their set's one slot.
pub async fn messages(
    tx: &mut PgConnection,
    destination: &CaptureDestination,
    sets_of: &SetsOf,
    taken: &[Taken],
) -> sqlx::Result<Vec<NewMessage>> {
    enum Out<'a> {
        One(&'a Taken),
        Set(&'a str, Vec<&'a Taken>),
    }
    let mut out: Vec<Out<'_>> = Vec::with_capacity(taken.len());
    let mut place: HashMap<&str, usize> = HashMap::new();
    let mut shared: Vec<(&str, &str)> = Vec::new();
    for t in taken {
        let Some(set_id) = sets_of.get(&t.id) else {
            out.push(Out::One(t));
            continue;
        };
        shared.push((&t.id, set_id));
        match place.get(set_id.as_str()) {
            Some(&i) => {
                if let Out::Set(_, members) = &mut out[i] {
                    members.push(t);
                }
            }
            None => {
                place.insert(set_id, out.len());
                out.push(Out::Set(set_id, vec![t]));
            }
        }
    }
    if !shared.is_empty() {
        sets::share_slots(tx, &shared).await?;
    }
    Ok(out
        .into_iter()
        .map(|o| match o {
            Out::One(t) => message(destination, t),
            Out::Set(set_id, members) => set_message(destination, set_id, &members),
        })
        .collect())
}

/// An import set's message (SPEC §15): FIFO group the project, deduplication
/// id `set:{setId}`, the trace of its first member's attempt.
fn set_message(destination: &CaptureDestination, set_id: &str, members: &[&Taken]) -> NewMessage {
    let jobs: Vec<SetMember<'_>> = members
        .iter()
        .map(|t| SetMember {
            id: &t.id,
            attempt: t.attempt,
            nonce: &t.nonce,
            settings: t.source.settings(),
        })
        .collect();
    NewMessage {
        body: set_job_body(destination, set_id, &jobs),
        message_group_id: members[0].project_id.to_string(),
        deduplication_id: set_deduplication_id(set_id),
        traceparent: members[0].traceparent.clone(),
    }
}

/// The queue message of an attempt granted a slot (SPEC §7), built from its
/// import's and attempt's rows as they are at the dispatch.
fn message(destination: &CaptureDestination, taken: &Taken) -> NewMessage {
    NewMessage {
        body: capture_job_body(
            destination,
            &taken.id,
            taken.attempt,
            &taken.nonce,
            &taken.source.settings(),
        ),
        message_group_id: taken.project_id.to_string(),
        deduplication_id: deduplication_id(&taken.id, taken.attempt),
        traceparent: taken.traceparent.clone(),
    }
}
