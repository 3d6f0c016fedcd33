//! The migrated catalog matches SPEC §1 and §3.

use sqlx::PgPool;

/// (name, data type, character maximum length, nullable, default)
type ColumnSpec = (
    &'static str,
    &'static str,
    Option<i32>,
    &'static str,
    Option<&'static str>,
);
type ColumnRow = (String, String, Option<i32>, String, Option<String>);

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn page_import_columns_match_spec(pool: PgPool) {
    let expected: &[ColumnSpec] = &[
        ("id", "character varying", Some(255), "NO", None),
        ("organization_id", "bigint", None, "NO", None),
        ("project_id", "bigint", None, "NO", None),
        (
            "source_kind",
            "character varying",
            Some(32),
            "NO",
            Some("'public_url'::character varying"),
        ),
        ("source_url", "text", None, "NO", None),
        ("viewport_width", "integer", None, "NO", None),
        ("viewport_height", "integer", None, "NO", None),
        ("device_scale_factor", "real", None, "NO", Some("1")),
        ("ready_selector", "character varying", Some(512), "YES", None),
        ("status", "USER-DEFINED", None, "NO", Some("'0'::page_import_status")),
        ("attempt", "integer", None, "NO", Some("1")),
        ("nonce", "character varying", Some(255), "NO", None),
        ("result_url", "character varying", Some(1000), "YES", None),
        ("capture_hash", "character varying", Some(80), "YES", None),
        ("screenshot_url", "character varying", Some(1000), "YES", None),
        ("error_message", "text", None, "YES", None),
        (
            "created_at",
            "timestamp with time zone",
            None,
            "NO",
            Some("CURRENT_TIMESTAMP"),
        ),
        (
            "updated_at",
            "timestamp with time zone",
            None,
            "NO",
            Some("CURRENT_TIMESTAMP"),
        ),
        ("deleted_at", "timestamp with time zone", None, "YES", None),
        ("created_by", "character varying", Some(50), "NO", None),
        ("updated_by", "character varying", Some(50), "NO", None),
        ("deleted_by", "character varying", Some(50), "YES", None),
        // SPEC §6/§14: the reader's settings, stored with the import.
        ("viewport_mobile", "boolean", None, "NO", Some("false")),
        (
            "color_scheme",
            "USER-DEFINED",
            None,
            "NO",
            Some("'light'::color_scheme"),
        ),
        (
            "locale",
            "character varying",
            Some(35),
            "NO",
            Some("'en-US'::character varying"),
        ),
        (
            "time_zone",
            "character varying",
            Some(64),
            "NO",
            Some("'UTC'::character varying"),
        ),
        ("consent", "USER-DEFINED", None, "NO", Some("'decline'::consent_mode")),
    ];
    let actual: Vec<ColumnRow> = sqlx::query_as(
        "select column_name::text, data_type::text, character_maximum_length::int, is_nullable::text, column_default::text
         from information_schema.columns
         where table_schema = 'public' and table_name = 'page_import'
         order by ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(actual.len(), expected.len(), "{actual:#?}");
    for (got, want) in actual.iter().zip(expected) {
        assert_eq!(got.0, want.0);
        assert_eq!(got.1, want.1, "type of {}", want.0);
        assert_eq!(got.2, want.2, "length of {}", want.0);
        assert_eq!(got.3, want.3, "nullability of {}", want.0);
        assert_eq!(got.4.as_deref(), want.4, "default of {}", want.0);
    }
    let udt: String = sqlx::query_scalar(
        "select udt_name::text from information_schema.columns where table_name = 'page_import' and column_name = 'status'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(udt, "page_import_status");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn status_enums_have_labels_0_1_2(pool: PgPool) {
    for type_name in ["page_import_status", "code2des_status"] {
        let labels: Vec<String> = sqlx::query_scalar(
            "select e.enumlabel::text from pg_enum e join pg_type t on t.oid = e.enumtypid
             where t.typname = $1 order by e.enumsortorder",
        )
        .bind(type_name)
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(labels, ["0", "1", "2"], "{type_name}");
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn named_indexes_exist_with_their_columns(pool: PgPool) {
    for (name, columns) in [
        ("page_import_pkey", "(id)"),
        ("page_import_project_status_idx", "(project_id, status)"),
        ("page_import_org_project_idx", "(organization_id, project_id)"),
    ] {
        let def: String =
            sqlx::query_scalar("select indexdef from pg_indexes where tablename = 'page_import' and indexname = $1")
                .bind(name)
                .fetch_one(&pool)
                .await
                .unwrap_or_else(|_| panic!("index {name} is missing"));
        assert!(def.ends_with(columns), "{name}: {def}");
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn foreign_keys_cascade_and_code2des_reference_is_not_unique(pool: PgPool) {
    let fks: Vec<(String, String, String, String)> = sqlx::query_as(
        "select conrelid::regclass::text, confrelid::regclass::text, confupdtype::text, confdeltype::text
         from pg_constraint where contype = 'f' order by 1, 2",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    for (table, target) in [
        ("page_import", "organization"),
        ("page_import", "project"),
        ("code2des", "page_import"),
        ("code2des", "organization"),
        ("code2des", "project"),
        ("project", "organization"),
        ("organization_member", "organization"),
    ] {
        let fk = fks
            .iter()
            .find(|fk| fk.0 == table && fk.1 == target)
            .unwrap_or_else(|| panic!("no FK {table} → {target}"));
        assert_eq!(
            (fk.2.as_str(), fk.3.as_str()),
            ("c", "c"),
            "{table} → {target} must cascade"
        );
    }
    let unique_on_page_import_id: bool = sqlx::query_scalar(
        "select exists (select 1 from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
         where i.indrelid = 'code2des'::regclass and i.indisunique and a.attname = 'page_import_id')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(!unique_on_page_import_id);
}
