//! Cases written after the corpus, in forms it does not have: a Spanish
//! modal, a Dutch bottom bar, a banner in a same-origin frame pinned to
//! the bottom, and two guards (an install-the-app sheet, a leave-this-page
//! confirmation).

use sqlx::PgPool;

use super::Reader::Presses;
use super::{guard, positive, DESKTOP};

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn spanish_modal_is_declined_by_rechazar_todo(pool: PgPool) {
    positive(pool, "spanish-modal", Presses(&["Rechazar todo"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn dutch_bottom_bar_is_declined_by_weigeren(pool: PgPool) {
    positive(pool, "dutch-bottom-bar", Presses(&["Weigeren"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn same_origin_frame_pinned_to_the_bottom_is_declined_by_reject_all(pool: PgPool) {
    positive(pool, "same-origin-bottom-frame", Presses(&["Reject all"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn install_app_bottom_sheet_is_left_alone(pool: PgPool) {
    guard(pool, "guard-install-app-sheet", DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn leave_this_page_dialog_is_left_alone(pool: PgPool) {
    guard(pool, "guard-leave-page-dialog", DESKTOP).await;
}
