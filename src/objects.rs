//! An import's objects in the artifact bucket (SPEC §13): listing a prefix
//! page by page, and deleting keys in `DeleteObjects` batches. Which keys
//! may be deleted at all is the contract's [`AttemptKey`] rule; this module
//! never deletes a key of another shape.

use std::collections::HashMap;

use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use page_import_contract::job::{import_of, import_prefix, AttemptKey, ARTIFACT_ROOT};

/// S3 takes at most 1 000 keys per `DeleteObjects` call (more is
/// `MalformedXML`). moto accepts more, so no test against it can catch an
/// oversized batch: the cap is here, and `batches` is unit-tested.
pub const DELETE_BATCH: usize = 1000;

/// What a listing of one prefix found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Keys of the shape an attempt writes: the ones erasure deletes.
    pub attempt_keys: Vec<String>,
    /// Keys of any other shape: logged and left alone.
    pub other_keys: Vec<String>,
    /// The newest object's time, of either kind.
    pub newest: Option<DateTime>,
}

/// Lists every object under `prefix`, following continuation tokens.
pub async fn list(s3: &aws_sdk_s3::Client, bucket: &str, prefix: &str) -> anyhow::Result<Listing> {
    let mut listing = Listing::default();
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for object in page?.contents() {
            if let Some(key) = object.key() {
                listing.add(key, object.last_modified());
            }
        }
    }
    Ok(listing)
}

impl Listing {
    fn add(&mut self, key: &str, modified: Option<&DateTime>) {
        if let Some(at) = modified {
            if self.newest.is_none_or(|newest| *at > newest) {
                self.newest = Some(*at);
            }
        }
        if AttemptKey::parse(key).is_some() {
            self.attempt_keys.push(key.to_owned());
        } else {
            self.other_keys.push(key.to_owned());
        }
    }
}

/// Lists the prefixes of several imports (`ids`, sorted) in one walk of the
/// key range they span, from the first id's prefix on, in pages of
/// `page_size` keys, stopping past the last id's prefix or after `max_pages`
/// pages (the range may hold many objects of other imports). Returns the
/// listing of every id the walk covered whole; the ids it did not reach are
/// left to a listing of their own.
///
/// The walk compares keys with prefixes, never id strings: a key of another
/// shape that sorts among them (`page-imports/{id}-notes/…` and
/// `page-imports/{id}.json` sort before `page-imports/{id}/`, since `-` and
/// `.` sort before `/`) is passed over, and ends no import's listing early.
pub async fn list_range(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    ids: &[String],
    page_size: i32,
    max_pages: usize,
) -> anyhow::Result<(HashMap<String, Listing>, Vec<String>)> {
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return Ok((HashMap::new(), Vec::new()));
    };
    let mut listings: HashMap<String, Listing> = ids.iter().map(|id| (id.clone(), Listing::default())).collect();
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(ARTIFACT_ROOT)
        // Every key of the first prefix sorts after this one: `.` sorts
        // just before `/`, and the prefix has no key shorter than itself.
        .start_after(format!("{ARTIFACT_ROOT}{first}."))
        .max_keys(page_size)
        .into_paginator()
        .send();
    let range = KeyRange::of(last);
    let mut reached: Option<String> = None;
    let mut done = false;
    for _ in 0..max_pages {
        let Some(page) = pages.next().await else {
            done = true;
            break;
        };
        for object in page?.contents() {
            let Some(key) = object.key() else { continue };
            if range.is_past(key) {
                done = true;
                break;
            }
            if let Some(listing) = import_of(key).and_then(|id| listings.get_mut(id)) {
                listing.add(key, object.last_modified());
            }
            reached = Some(key.to_owned());
        }
        if done {
            break;
        }
    }
    if done {
        return Ok((listings, Vec::new()));
    }
    // Cut short: an id whose prefix the walk is inside of, or has not
    // reached, is not covered.
    let rest: Vec<String> = ids
        .iter()
        .filter(|id| reached.as_deref().is_none_or(|key| !KeyRange::of(id).is_past(key)))
        .cloned()
        .collect();
    rest.iter().for_each(|id| {
        listings.remove(id);
    });
    Ok((listings, rest))
}

/// The keys of one import's prefix, `page-imports/{id}/…`, as a range of
/// the bucket's sorted keys.
struct KeyRange(String);

impl KeyRange {
    fn of(id: &str) -> Self {
        Self(import_prefix(id))
    }

    /// Whether `key` sorts after every key of the prefix.
    fn is_past(&self, key: &str) -> bool {
        key > self.0.as_str() && !key.starts_with(&self.0)
    }
}

/// The `page-imports/{x}/` prefixes directly under `root`, page by page.
pub async fn list_prefixes(s3: &aws_sdk_s3::Client, bucket: &str, root: &str) -> anyhow::Result<Vec<String>> {
    let mut prefixes = Vec::new();
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(root)
        .delimiter("/")
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        prefixes.extend(
            page?
                .common_prefixes()
                .iter()
                .filter_map(|p| p.prefix().map(str::to_owned)),
        );
    }
    Ok(prefixes)
}

/// Splits keys into `DeleteObjects` batches of at most [`DELETE_BATCH`].
pub fn batches(keys: &[String]) -> impl Iterator<Item = &[String]> {
    keys.chunks(DELETE_BATCH)
}

/// Deletes one batch (≤ [`DELETE_BATCH`] keys, all of the attempt shape).
/// A key S3 reports it could not delete fails the whole call, so the caller
/// keeps its ledger entry and tries again. A key that was already gone is
/// not an error: S3 deletes idempotently.
pub async fn delete_batch(s3: &aws_sdk_s3::Client, bucket: &str, keys: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(
        keys.len() <= DELETE_BATCH,
        "a DeleteObjects batch of {} keys",
        keys.len()
    );
    if let Some(key) = keys.iter().find(|key| AttemptKey::parse(key).is_none()) {
        anyhow::bail!("refusing to delete {key:?}: not an attempt's object");
    }
    if keys.is_empty() {
        return Ok(());
    }
    let objects = keys
        .iter()
        .map(|key| ObjectIdentifier::builder().key(key).build())
        .collect::<Result<Vec<_>, _>>()?;
    let delete = Delete::builder().set_objects(Some(objects)).quiet(true).build()?;
    let out = s3.delete_objects().bucket(bucket).delete(delete).send().await?;
    if let Some(error) = out.errors().first() {
        anyhow::bail!(
            "S3 could not delete {} of {} objects (first: {})",
            out.errors().len(),
            keys.len(),
            error.code().unwrap_or("no code"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "019af0c2-5a1b-7c2d-9e4f-0a1b2c3d4e5f";

    #[test]
    fn keys_that_sort_beside_a_prefix_are_neither_in_it_nor_past_it() {
        let range = KeyRange::of(ID);
        let before = [
            format!("page-imports/{ID}"),
            format!("page-imports/{ID}-copy/1/capture.json"),
            format!("page-imports/{ID}.json"),
            format!("page-imports/{ID}/"),
            format!("page-imports/{ID}/1/capture.json"),
            format!("page-imports/{ID}/9/assets/x.png"),
        ];
        for key in &before {
            assert!(!range.is_past(key), "{key}");
        }
        for key in [
            format!("page-imports/{ID}0/1/x"),
            format!("page-imports/{ID}~"),
            "page-imports/z".into(),
        ] {
            assert!(range.is_past(&key), "{key}");
        }
        assert_eq!(import_of(&before[1]), Some(&*format!("{ID}-copy")));
        assert_eq!(import_of(&before[2]), None);
        assert_eq!(import_of(&before[4]), Some(ID));
        // The walk's first key: every key of the prefix sorts after it.
        let start = format!("page-imports/{ID}.");
        assert!(before[3..].iter().all(|key| key.as_str() > start.as_str()));
    }

    #[test]
    fn batches_never_exceed_what_s3_takes() {
        for n in [0, 1, 999, 1000, 1001, 2500] {
            let keys: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            let sizes: Vec<usize> = batches(&keys).map(<[String]>::len).collect();
            assert!(sizes.iter().all(|&s| (1..=DELETE_BATCH).contains(&s)), "{n}: {sizes:?}");
            assert_eq!(sizes.iter().sum::<usize>(), n);
            assert_eq!(sizes.len(), n.div_ceil(DELETE_BATCH));
        }
    }
}
