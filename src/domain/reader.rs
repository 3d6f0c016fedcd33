//! The reader's language and clock (SPEC §6, §14): a `locale` and a
//! `timeZone`, each checked by a maintained library, not by a list of ours.
//! The colour scheme and the consent choice are plain enums of the contract
//! crate (`ColorScheme`, `Consent`): serde refuses any other value.

use std::fmt;

pub use page_import_contract::job::{ColorScheme, Consent};

use super::FieldError;

/// The reader whose page the capture shows, besides the viewport: every
/// attempt of an import captures with the same (SPEC §6).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReaderSettings {
    pub color_scheme: ColorScheme,
    pub locale: Locale,
    pub time_zone: TimeZone,
    pub consent: Consent,
}

/// The longest `locale` accepted (SPEC §6).
pub const MAX_LOCALE_CHARS: usize = 35;

/// A well-formed BCP 47 language tag (RFC 5646, by `language-tags`) in its
/// canonical case (`ja-jp` → `ja-JP`, `zh-hant-tw` → `zh-Hant-TW`), that
/// starts with a language subtag. Tags without one, private-use tags
/// (`x-whatever`) and the irregular grandfathered ones (`i-klingon`,
/// `sgn-BE-FR`), are well-formed but name no language a browser can take:
/// Chromium's `Emulation.setLocaleOverride` refuses them ("Invalid locale
/// name"), so they are a 422 here rather than a capture in another
/// language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locale(String);

impl Locale {
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        let err = |code, message: &str| FieldError::new("locale", code, message);
        if s.is_empty() || s.chars().count() > MAX_LOCALE_CHARS {
            return Err(err("invalid_length", "locale must be 1 to 35 characters"));
        }
        if !s.chars().all(page_import_contract::job::sqs_can_carry) {
            return Err(err(
                "unsupported_character",
                "locale contains a character a queue message cannot carry",
            ));
        }
        let tag = language_tags::LanguageTag::parse(s)
            .map_err(|_| err("invalid_locale", "locale is not a well-formed BCP 47 language tag"))?;
        let language = tag.primary_language();
        if !(2..=8).contains(&language.len()) || !language.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(err(
                "unsupported_locale",
                "locale must start with a language subtag (private-use and irregular grandfathered tags name no language)",
            ));
        }
        Ok(Self(tag.into_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Locale {
    fn default() -> Self {
        Self(page_import_contract::job::DEFAULT_LOCALE.to_owned())
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A zone of the IANA time-zone database (`chrono-tz`'s copy), by its
/// name; a name in another case (`asia/tokyo`) is taken as the database
/// spells it (`Asia/Tokyo`). Links (`Japan`, `US/Pacific`) are zones of the
/// database too, and Chromium's ICU knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeZone(&'static str);

impl TimeZone {
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        let zone = s.parse::<chrono_tz::Tz>().ok().or_else(|| {
            (s.len() <= 64)
                .then(|| {
                    chrono_tz::TZ_VARIANTS
                        .iter()
                        .copied()
                        .find(|tz| tz.name().eq_ignore_ascii_case(s))
                })
                .flatten()
        });
        match zone {
            Some(zone) => Ok(Self(zone.name())),
            None => Err(FieldError::new(
                "timeZone",
                "invalid_time_zone",
                "timeZone is not a zone of the IANA time-zone database (e.g. Asia/Tokyo)",
            )),
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.0
    }
}

impl Default for TimeZone {
    fn default() -> Self {
        Self(page_import_contract::job::DEFAULT_TIME_ZONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn locales_are_stored_in_their_canonical_case() {
        for (given, stored) in [
            ("ja-JP", "ja-JP"),
            ("ja-jp", "ja-JP"),
            ("EN-us", "en-US"),
            ("zh-hant-tw", "zh-Hant-TW"),
            ("pt-BR", "pt-BR"),
            ("sr-latn-rs", "sr-Latn-RS"),
            ("de", "de"),
            ("es-419", "es-419"),
            ("en-US-u-ca-buddhist", "en-US-u-ca-buddhist"),
            ("en-x-twain", "en-x-twain"),
        ] {
            assert_eq!(Locale::parse(given).unwrap().as_str(), stored, "{given}");
        }
        assert_eq!(Locale::default().as_str(), "en-US");
    }

    #[test]
    fn malformed_and_languageless_tags_are_refused_with_their_codes() {
        for (bad, code) in [
            ("", "invalid_length"),
            (&"a".repeat(36) as &str, "invalid_length"),
            ("en_US", "invalid_locale"),
            ("e", "invalid_locale"),
            ("en-", "invalid_locale"),
            ("en--US", "invalid_locale"),
            ("ja JP", "invalid_locale"),
            ("日本語", "invalid_locale"),
            ("en-US-a", "invalid_locale"),
            ("x-private", "unsupported_locale"),
            ("i-klingon", "unsupported_locale"),
            ("sgn-BE-FR", "unsupported_locale"),
            ("en\u{FFFF}", "unsupported_character"),
        ] {
            assert_eq!(Locale::parse(bad).unwrap_err().code, code, "{bad:?}");
            assert_eq!(Locale::parse(bad).unwrap_err().field, "locale");
        }
    }

    #[test]
    fn time_zones_are_the_databases_names() {
        for (given, stored) in [
            ("Asia/Tokyo", "Asia/Tokyo"),
            ("asia/tokyo", "Asia/Tokyo"),
            ("UTC", "UTC"),
            ("America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
            ("Japan", "Japan"),
            ("US/Pacific", "US/Pacific"),
            ("Etc/GMT+5", "Etc/GMT+5"),
        ] {
            assert_eq!(TimeZone::parse(given).unwrap().as_str(), stored, "{given}");
        }
        for bad in [
            "",
            "Tokyo",
            "Asia/Tokio",
            "+09:00",
            "GMT+9",
            "Asia/Tokyo ",
            "a".repeat(100).as_str(),
        ] {
            assert_eq!(TimeZone::parse(bad).unwrap_err().code, "invalid_time_zone", "{bad:?}");
        }
        assert_eq!(TimeZone::default().as_str(), "UTC");
    }

    proptest! {
        /// Whatever the input, parsing never panics; an accepted tag is
        /// short enough and parses again to itself (canonical case is a
        /// fixed point).
        #[test]
        fn an_accepted_locale_is_its_own_canonical_form(s in "[a-zA-Z0-9-]{0,40}|\\PC{0,12}") {
            if let Ok(locale) = Locale::parse(&s) {
                prop_assert!(locale.as_str().len() <= MAX_LOCALE_CHARS);
                prop_assert_eq!(Locale::parse(locale.as_str()).unwrap(), locale.clone());
                prop_assert!(locale.as_str().eq_ignore_ascii_case(&s));
            }
        }

        #[test]
        fn a_time_zone_never_panics(s in "\\PC{0,40}") {
            if let Ok(zone) = TimeZone::parse(&s) {
                prop_assert!(zone.as_str().eq_ignore_ascii_case(&s));
            }
        }
    }
}
