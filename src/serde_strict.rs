//! A struct is a mapping, never a list. serde's derive also takes a list
//! for a struct and fills its fields by position, so `["v1", "Node"]`
//! where an object belongs reads as `{apiVersion: v1, kind: Node}`, and a
//! snapshot item, an API answer or a signature file written as a list
//! is misread instead of refused. The YAML reader (`yaml_guard`'s
//! deserializer) refuses that itself; [`Strict`] wraps any other
//! deserializer (serde_json's, a `serde_json::Value`) so every struct, at
//! any depth, is read from a mapping only: a list is the deserializer's
//! own "invalid type: sequence, expected struct …" error, at its place.

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

/// `D`, with structs read from mappings only, at every depth.
pub struct Strict<D>(pub D);

/// `T` from JSON text, structs from objects only (and nothing after the
/// value): `serde_json::from_str`'s strict twin.
pub fn from_json_str<'a, T: serde::Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(v)
}

/// [`from_json_str`] over bytes.
pub fn from_json_slice<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(v)
}

/// `T` from a JSON value, structs from objects only.
pub fn from_json_value<T: de::DeserializeOwned>(v: serde_json::Value) -> serde_json::Result<T> {
    T::deserialize(Strict(v))
}

macro_rules! forward {
    ($($m:ident),* $(,)?) => {
        $(fn $m<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            self.0.$m(Strict(v))
        })*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Strict(v))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Strict(v))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Strict(v))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple_struct(name, len, Strict(v))
    }

    /// The point of it all: a struct from a mapping; a list is the inner
    /// deserializer's invalid-type error.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(Strict(v))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, Strict(v))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($m:ident: $t:ty),* $(,)?) => {
        $(fn $m<E: de::Error>(self, x: $t) -> Result<Self::Value, E> {
            self.0.$m(x)
        })*
    };
}

/// The visitor, handing the wrapped deserializer on to what it visits.
impl<'de, V: Visitor<'de>> Visitor<'de> for Strict<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.expecting(f)
    }

    visit!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_f64: f64,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: Vec<u8>,
    );

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(Strict(a))
    }

    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Strict(a))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Strict(a))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Strict(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Strict<A> {
    type Error = A::Error;
    type Variant = Strict<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0.variant_seed(Strict(seed)).map(|(v, rest)| (v, Strict(rest)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Strict(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Strict(v))
    }

    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], v: V) -> Result<V::Value, A::Error> {
        // The variant's body is a struct too: from a mapping only. There is
        // no map form of `struct_variant`, so the body goes through
        // `newtype_variant_seed` as a struct of its own.
        self.0.newtype_variant_seed(Strict(VariantBody(v)))
    }
}

/// A struct variant's body, read as a mapping.
struct VariantBody<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for VariantBody<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_map(self.0)
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Strict<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct Item {
        api_version: String,
        kind: String,
        spec: Option<Spec>,
        list: Vec<Spec>,
        map: BTreeMap<String, Spec>,
        choice: Option<Choice>,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    struct Spec {
        n: u32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Choice {
        Plain,
        Wrapped(Spec),
        Shaped { n: u32 },
    }

    #[test]
    fn mappings_read_as_before() {
        let text = r#"{"apiVersion":"v1","kind":"Node","spec":{"n":1},"list":[{"n":2}],"map":{"a":{"n":3}},"choice":{"shaped":{"n":4}}}"#;
        let strict: Item = from_json_str(text).unwrap();
        let loose: Item = serde_json::from_str(text).unwrap();
        assert_eq!(strict, loose);
        assert_eq!(strict.choice, Some(Choice::Shaped { n: 4 }));
        for c in [r#""plain""#, r#"{"wrapped":{"n":5}}"#] {
            let t = format!(r#"{{"choice":{c}}}"#);
            assert_eq!(from_json_str::<Item>(&t).unwrap(), serde_json::from_str::<Item>(&t).unwrap());
        }
        let v: Item = from_json_value(serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!(v, loose);
    }

    /// Each place a struct sits, given a list: serde_json alone reads it by
    /// position; the strict reader refuses it.
    #[test]
    fn a_list_where_a_struct_belongs_is_refused_at_every_depth() {
        for text in [
            r#"["v1","Node"]"#,
            r#"{"spec":[7]}"#,
            r#"{"list":[[7]]}"#,
            r#"{"map":{"a":[7]}}"#,
            r#"{"choice":{"wrapped":[7]}}"#,
            r#"{"choice":{"shaped":[7]}}"#,
        ] {
            assert!(serde_json::from_str::<Item>(text).is_ok(), "serde_json reads {text} by position");
            let e = from_json_str::<Item>(text).unwrap_err().to_string();
            assert!(e.contains("invalid type: sequence"), "{text}: {e}");
            let e = from_json_value::<Item>(serde_json::from_str(text).unwrap()).unwrap_err().to_string();
            assert!(e.contains("invalid type: sequence"), "{text}: {e}");
        }
        assert!(from_json_slice::<Item>(br#"{"kind":"x"} trailing"#).is_err());
        // The refusal says what was expected, as the visitor words it.
        let e = from_json_str::<Item>(r#"{"spec":[7]}"#).unwrap_err().to_string();
        assert!(e.contains("expected struct Spec"), "{e}");
    }

    /// Types that read differently from text formats (an address is a string
    /// in JSON, bytes in a binary format) still see JSON as text.
    #[test]
    fn json_stays_human_readable() {
        let ip: std::net::IpAddr = from_json_str(r#""127.0.0.1""#).unwrap();
        assert_eq!(ip, std::net::IpAddr::from([127, 0, 0, 1]));
    }
}
