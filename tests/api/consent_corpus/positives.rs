//! The corpus's consent banners: each declined through its own reject
//! control as a reader declines it, or hidden where it has none.

use sqlx::PgPool;

use super::Reader::{Presses, PressesInFrame, WithoutBanner};
use super::{positive, DESKTOP, PHONE};

// Libraries from the npm registry.

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn react_cookie_consent_bottom_bar_is_declined_by_i_decline(pool: PgPool) {
    positive(pool, "react-cookie-consent", Presses(&["I decline"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn orejime_forced_modal_is_declined_by_decline_all_then_save(pool: PgPool) {
    positive(
        pool,
        "orejime-forced-modal",
        Presses(&[".orejime-PurposeToggles-disableAll", ".orejime-Modal-saveButton"]),
        DESKTOP,
    )
    .await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn osano_corner_box_is_declined_by_decline(pool: PgPool) {
    positive(pool, "osano-corner-box", Presses(&["Decline"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn osano_top_bar_that_pushes_the_page_down_is_declined_by_decline(pool: PgPool) {
    positive(pool, "osano-top-pushdown", Presses(&["Decline"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn two_layer_cmp_is_declined_by_reject_all_behind_manage_preferences(pool: PgPool) {
    positive(
        pool,
        "vanilla-cookieconsent-two-layer",
        Presses(&["Manage preferences", "Reject all"]),
        DESKTOP,
    )
    .await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn cmp_library_in_a_cross_site_frame_is_declined_in_its_frame(pool: PgPool) {
    positive(
        pool,
        "vanilla-cookieconsent-cross-site-frame",
        PressesInFrame(&["Reject all"]),
        DESKTOP,
    )
    .await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn klaro_german_notice_is_declined_by_ich_lehne_ab(pool: PgPool) {
    positive(pool, "klaro-german", Presses(&[".cn-decline"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn tarteaucitron_french_bar_is_declined_by_tout_refuser(pool: PgPool) {
    positive(
        pool,
        "tarteaucitron-french",
        Presses(&["#tarteaucitronAllDenied2"]),
        DESKTOP,
    )
    .await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn web_component_banner_in_an_open_shadow_root_is_declined_by_required_cookies_only(pool: PgPool) {
    positive(
        pool,
        "porsche-open-shadow-root",
        Presses(&["Continue with technically required cookies only"]),
        DESKTOP,
    )
    .await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn spanish_bar_that_pushes_the_page_down_is_declined_by_rechazar(pool: PgPool) {
    positive(pool, "cookies-eu-banner-spanish", Presses(&["Rechazar"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn notice_library_with_only_ok_is_hidden_never_pressed(pool: PgPool) {
    positive(pool, "cookie-notice-ok-only", WithoutBanner, DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn cmp_a_tag_manager_loads_after_the_load_event_is_declined(pool: PgPool) {
    positive(pool, "late-tag-manager", Presses(&["Reject all"]), DESKTOP).await;
}

// Banners written by hand, as sites write them.

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn german_bottom_bar_is_declined_by_nur_notwendige(pool: PgPool) {
    positive(pool, "german-bottom-bar", Presses(&["Nur notwendige"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn japanese_modal_with_backdrop_and_scroll_lock_is_declined_by_kyohi_suru(pool: PgPool) {
    positive(pool, "japanese-modal", Presses(&["拒否する"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn polish_modal_is_declined_by_odrzuc_wszystkie(pool: PgPool) {
    positive(pool, "polish-modal", Presses(&["Odrzuć wszystkie"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn bottom_sheet_in_a_closed_shadow_root_is_declined_by_reject_all(pool: PgPool) {
    positive(pool, "closed-shadow-sheet", Presses(&["Reject all"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn italian_top_bar_is_declined_by_rifiuta(pool: PgPool) {
    positive(pool, "italian-top-bar", Presses(&["Rifiuta"]), DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn consent_or_pay_wall_is_hidden_with_its_backdrop_and_lock_released(pool: PgPool) {
    positive(pool, "consent-or-pay-wall", WithoutBanner, DESKTOP).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn notice_with_only_ok_got_it_is_hidden_never_pressed(pool: PgPool) {
    positive(pool, "ok-got-it-notice", WithoutBanner, DESKTOP).await;
}

// On a phone.

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn react_cookie_consent_bar_on_a_phone_is_declined(pool: PgPool) {
    positive(pool, "react-cookie-consent", Presses(&["I decline"]), PHONE).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn german_bottom_bar_on_a_phone_is_declined_by_nur_notwendige(pool: PgPool) {
    positive(pool, "german-bottom-bar", Presses(&["Nur notwendige"]), PHONE).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn japanese_modal_on_a_phone_is_declined_by_kyohi_suru(pool: PgPool) {
    positive(pool, "japanese-modal", Presses(&["拒否する"]), PHONE).await;
}
