//! Contract enums stored as PostgreSQL enums of the same labels (the
//! reader's `colorScheme` and `consent`, SPEC §14). The contract crate
//! knows nothing of SQL (the worker's dependencies include no database
//! client, `tests/api/capture.rs`), so the mapping lives here, once for
//! every such enum: [`Label`] reads and writes any [`PgLabel`].

use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef};
use sqlx::Postgres;

use crate::domain::reader::{ColorScheme, Consent};

/// An enum whose values are the labels of a PostgreSQL enum type.
pub trait PgLabel: Sized + Copy {
    /// The enum type's name in PostgreSQL.
    const PG_TYPE: &'static str;
    fn label(self) -> &'static str;
    fn from_label(label: &str) -> Option<Self>;
}

impl PgLabel for ColorScheme {
    const PG_TYPE: &'static str = "color_scheme";
    fn label(self) -> &'static str {
        self.as_str()
    }
    fn from_label(label: &str) -> Option<Self> {
        Self::parse(label)
    }
}

impl PgLabel for Consent {
    const PG_TYPE: &'static str = "consent_mode";
    fn label(self) -> &'static str {
        self.as_str()
    }
    fn from_label(label: &str) -> Option<Self> {
        Self::parse(label)
    }
}

/// A [`PgLabel`] as a column: `pi.color_scheme as "color_scheme: Label<ColorScheme>"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label<T>(pub T);

impl<T: PgLabel> sqlx::Type<Postgres> for Label<T> {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_name(T::PG_TYPE)
    }
}

impl<T: PgLabel> sqlx::Encode<'_, Postgres> for Label<T> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<Postgres>>::encode(self.0.label(), buf)
    }
}

impl<T: PgLabel> sqlx::Decode<'_, Postgres> for Label<T> {
    fn decode(value: PgValueRef<'_>) -> Result<Self, sqlx::error::BoxDynError> {
        let label = <&str as sqlx::Decode<Postgres>>::decode(value)?;
        T::from_label(label)
            .map(Label)
            .ok_or_else(|| format!("unknown {} label {label:?}", T::PG_TYPE).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_its_own_label_and_back() {
        for scheme in [ColorScheme::Light, ColorScheme::Dark] {
            assert_eq!(ColorScheme::from_label(scheme.label()), Some(scheme));
        }
        for consent in [Consent::Decline, Consent::Keep] {
            assert_eq!(Consent::from_label(consent.label()), Some(consent));
        }
        assert_eq!(ColorScheme::from_label("Dark"), None);
    }
}
